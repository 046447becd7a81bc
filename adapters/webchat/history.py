"""What the web chat platform itself keeps: its messages, their edits, deletes and reactions.

The web chat is a chat server of its own, so, like Slack or Discord, it keeps what was said
whether or not the host has read it. `History` holds the messages in memory and appends every
change, as the payload the host is given (`adapters.webchat.normalise`), to a JSON-lines file
before anything else sees it; on start the file is read back and yields those payloads again,
so the host can take them once more (they are idempotent) and nothing said before a crash is
lost. Message ids count up from 1 across restarts.

An agent's message also records the idempotency key it was sent with (`key`), so a retried send
finds the message it already posted instead of posting a second one.

An agent's message that ends with `core.drafts.WRITING` is a streamed reply still being written:
its next edit finishes it (the whole text, the mark gone) and is not shown as an edit. Only a
change after that, such as the agent's own `chat_edit_message` on the finished answer, shows
"(edited)". The rule reads only what the file holds, so a restart shows the same.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

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
    """The platform's record of one web chat, kept in `path` (None: in memory only)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.messages: dict[str, Message] = {}
        self.by_key: dict[str, str] = {}
        self.members: set[tuple[str, str]] = set()
        self._last_id = 0

    def load(self) -> list[dict[str, Any]]:
        """Read the file back; returns every payload it held, in order. A line that cannot be
        read (a write cut short by a crash) is reported and skipped."""
        if self.path is None or not self.path.exists():
            return []
        payloads = []
        for number, line in enumerate(self.path.read_bytes().splitlines(), start=1):
            try:
                payload = orjson.loads(line)
                self.apply(payload)
            except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
                log.warning("%s line %d skipped, unreadable: %s", self.path, number, exc)
                continue
            payloads.append(payload)
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
        """Append a change to the file, then apply it; returns the message it touched."""
        if self.path is not None and payload["type"] != "typing":
            with self.path.open("ab") as file:
                file.write(orjson.dumps(payload) + b"\n")
        return self.apply(payload)

    def apply(self, payload: dict[str, Any]) -> Message | None:
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
            return message
        message = self.messages[payload["id"]]
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
        return message

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages.values())
