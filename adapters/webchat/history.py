"""What the web chat platform itself keeps: its messages, their edits, deletes and reactions.

The web chat is a chat server of its own, so, like Slack or Discord, it keeps what was said
whether or not the host has read it. `History` holds the messages in memory and appends every
change, as the payload the host is given (`adapters.webchat.normalise`), to a JSON-lines file
before anything else sees it; on start the file is read back and yields those payloads again,
so the host can take them once more (they are idempotent) and nothing said before a crash is
lost. Message ids count up from 1 across restarts.

An agent's message also records the idempotency key it was sent with (`key`), so a retried send
finds the message it already posted instead of posting a second one.

With the workspace's `retention`, `forget` drops from the file and from memory the threads in
which nothing has happened for that long, as the ledger drops its records (`core.retention`).

An agent's message that ends with `core.drafts.WRITING` is a streamed reply still being written:
its next edit finishes it (the whole text, the mark gone) and is not shown as an edit. Only a
change after that, such as the agent's own `chat_edit_message` on the finished answer, shows
"(edited)". The rule reads only what the file holds, so a restart shows the same.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from core.clock import parse_time
from core.drafts import WRITING

__all__ = ["History", "Message"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Message:
    """One message as the page shows it."""

    id: str
    channel: str
    thread: str | None
    user: str
    text: str
    ts: str
    reply_to: str | None = None
    key: str | None = None
    mentions: dict[str, list[str]] = field(default_factory=dict)
    edited: bool = False
    deleted: bool = False
    edits: list[str] = field(default_factory=list)
    reactions: dict[str, list[str]] = field(default_factory=dict)

    @property
    def writing(self) -> bool:
        """Whether this is an agent's streamed reply still being written (posted with a key,
        its text marked)."""
        return self.key is not None and not self.edited and self.text.endswith(WRITING)

    def view(self) -> dict[str, Any]:
        """The message for the page (a deleted one keeps its place, not its text)."""
        return {
            "id": self.id,
            "channel": self.channel,
            "thread": self.thread,
            "user": self.user,
            "text": "" if self.deleted else self.text,
            "ts": self.ts,
            "replyTo": self.reply_to,
            "mentions": [name for names in self.mentions.values() for name in names],
            "edited": self.edited,
            "deleted": self.deleted,
            "reactions": {emoji: list(users) for emoji, users in self.reactions.items() if users},
        }


class History:
    """The platform's record of one web chat, kept in `path` (None: in memory only).

    Beside the messages it knows, for retention, which lines of the file are about each
    message and when something last happened in each thread (a thread is named by its first
    message's id)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.messages: dict[str, Message] = {}
        self.by_key: dict[str, str] = {}
        self.members: set[tuple[str, str]] = set()
        self._last_id = 0
        self._lines: dict[str, list[int]] = {}  # message id -> the file's lines about it
        self._active: dict[str, datetime] = {}  # thread -> when something last happened in it
        self._timeless: set[str] = set()  # threads with a change whose time cannot be read
        self._count = 0  # lines in the file
        self._newest = ""  # the thread of the newest message, which retention keeps

    def load(self) -> list[dict[str, Any]]:
        """Read the file back; returns every payload it held, in order. A line that cannot be
        read (a write cut short by a crash) is reported and skipped; the file is ended with a
        line break after it, so what is written next does not join it and go unread too."""
        if self.path is None or not self.path.exists():
            return []
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            with self.path.open("ab") as file:
                file.write(b"\n")
        payloads = []
        lines = data.splitlines()
        for number, line in enumerate(lines):
            try:
                payload = orjson.loads(line)
                self.apply(payload, line=number)
            except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
                log.warning("%s line %d skipped, unreadable: %s", self.path, number + 1, exc)
                continue
            payloads.append(payload)
        self._count = len(lines)
        return payloads

    def thread_in(self, channel: str, thread: str | None) -> str | None:
        """The thread a post (or typing) naming `thread` goes to: the thread of that message,
        which must be one of `channel`'s (a reply's id names its thread). LookupError when
        there is no such message there."""
        if thread is None:
            return None
        root = self.messages.get(thread)
        if root is None or root.channel != channel:
            raise LookupError(f"no message {thread!r} in {channel!r} to reply to in a thread")
        return root.thread or root.id

    def has_member(self, channel: str, user: str) -> bool:
        return (channel, user) in self.members

    def next_id(self) -> str:
        self._last_id += 1
        return str(self._last_id)

    def record(self, payload: dict[str, Any]) -> Message | None:
        """Append a change to the file, durably, then apply it; returns the message it touched.
        On disk before the ledger has it (0.3 ms here): after a power cut the record holds every
        message the ledger may, so an id is never given again to a new message."""
        if self.path is None or payload["type"] == "typing":
            return self.apply(payload)
        with self.path.open("ab") as file:
            file.write(orjson.dumps(payload) + b"\n")
            file.flush()
            os.fsync(file.fileno())
        self._count += 1
        return self.apply(payload, line=self._count - 1)

    def apply(self, payload: dict[str, Any], line: int | None = None) -> Message | None:
        """Take one change (from the file's `line`, if it is written there)."""
        kind = payload["type"]
        if kind == "typing":
            return None
        if kind == "member_joined":
            self.members.add((payload["channel"], payload["user"]))
            return None
        if kind == "message":
            message = Message(
                id=payload["id"],
                channel=payload["channel"],
                thread=payload.get("thread"),
                user=payload["user"],
                text=payload["text"],
                ts=payload["ts"],
                reply_to=payload.get("replyTo"),
                key=payload.get("key"),
                mentions=dict(payload.get("mentions") or {}),
            )
            self.messages[message.id] = message
            self._last_id = max(self._last_id, int(message.id))
            if message.key:
                self.by_key[message.key] = message.id
        else:
            message = self.messages[payload["id"]]
            self._change(message, kind, payload)
        if line is not None:
            self._lines.setdefault(message.id, []).append(line)
        thread = message.thread or message.id
        if kind == "message":
            self._newest = thread
        moment = _moment(payload)
        if moment is None:
            self._timeless.add(thread)
            self._active.pop(thread, None)
        elif thread not in self._timeless:
            # Quietest first: a thread moves to the end when something happens in it (the
            # record is in time order; after a clock set back, a thread may wait a round).
            self._active[thread] = max(self._active.pop(thread, moment), moment)
        return message

    def _change(self, message: Message, kind: str, payload: dict[str, Any]) -> None:
        if kind == "edit":
            message.edited = message.edited or not message.writing  # else it is finished
            message.text = payload["text"]
            message.mentions = dict(payload.get("mentions") or {})
            message.edits.append(payload["ts"])
        elif kind == "delete":
            message.deleted = True
        elif kind == "reaction_added":
            users = message.reactions.setdefault(payload["emoji"], [])
            if payload["user"] not in users:
                users.append(payload["user"])
        elif kind == "reaction_removed":
            users = message.reactions.get(payload["emoji"], [])
            if payload["user"] in users:
                users.remove(payload["user"])

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages.values())

    def forget(self, before: datetime) -> list[str]:
        """Drop every thread in which nothing happened since `before` (a message, its replies,
        and their edits, deletes and reactions) from memory and from the file; returns the ids
        of the messages that went. The newest message stays however old (ids count on from
        it), and so do who joined where, any line that cannot be read, and a thread with a
        change whose time cannot be read. The file is written anew beside itself and swapped
        in (a crash leaves the old one or the new, never a mix); one that is not as this record
        wrote it (its lines miscounted) is left whole, reported."""
        quiet = self._quiet(before)
        if not quiet:
            return []
        gone = self._messages_in(quiet)
        drop = {line for message_id in gone for line in self._lines.get(message_id, ())}
        if drop and not self._rewrite(drop):
            return []
        for message_id in gone:
            message = self.messages.pop(message_id)
            self._lines.pop(message_id, None)
            if message.key:
                self.by_key.pop(message.key, None)
        for thread in quiet:
            del self._active[thread]
        return gone

    def outlived(self, before: datetime) -> list[str]:
        """The ids of the messages `forget(before)` would drop, dropping nothing."""
        return self._messages_in(self._quiet(before))

    def _quiet(self, before: datetime) -> set[str]:
        """The threads in which nothing happened since `before`, but the newest message's."""
        quiet = set()
        for thread, at in self._active.items():  # the quietest first
            if at >= before:
                break
            if thread != self._newest:
                quiet.add(thread)
        return quiet

    def _messages_in(self, threads: set[str]) -> list[str]:
        return [m.id for m in self.messages.values() if (m.thread or m.id) in threads]

    def _rewrite(self, drop: set[int]) -> bool:
        """The file without the lines `drop`, the lines that stay numbered again."""
        assert self.path is not None
        lines = self.path.read_bytes().splitlines()
        if len(lines) != self._count:
            log.warning(
                "%s holds %d lines where %d were written: not pruned",
                self.path,
                len(lines),
                self._count,
            )
            return False
        fresh = self.path.with_name(self.path.name + ".new")
        with fresh.open("wb") as file:
            file.writelines(line + b"\n" for n, line in enumerate(lines) if n not in drop)
            file.flush()
            os.fsync(file.fileno())
        os.replace(fresh, self.path)
        stays = (n for n in range(self._count) if n not in drop)
        renumbered = {old: new for new, old in enumerate(stays)}
        for numbers in self._lines.values():
            numbers[:] = [renumbered[n] for n in numbers if n in renumbered]
        self._count = len(renumbered)
        return True


def _moment(payload: dict[str, Any]) -> datetime | None:
    """When a change happened; None when its time cannot be read."""
    try:
        return parse_time(str(payload["ts"]))
    except (KeyError, ValueError):
        return None
