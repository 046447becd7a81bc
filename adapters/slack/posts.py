"""The agents' Slack messages: posting (rendered, split into parts, paced, each part tagged
with the action's idempotency key in Slack message metadata), finding an earlier attempt in the
channel's or thread's history, edits and deletes. A post's files are shared with its last part
as their comment (`adapters.slack.uploads`), and recognised in the history the same way.

When a post may have landed but Slack's answer was lost, the outbox marks the action ambiguous
and `find` looks for it before anything is sent again; parts of a split message found there
are not posted again. An ephemeral message is kept nowhere by Slack, so it is never found.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from adapters.slack.manifest import SlackAgent
from adapters.slack.pacing import ChannelPacer
from adapters.slack.render import Placement, message_ref, place, render_message
from adapters.slack.uploads import is_shared, share_files
from adapters.slack.webapi import WebApi
from core.actions import Delete, Edit, Post, Working
from core.clock import Clock
from core.errors import PermanentSendError, RenderError, TransientSendError
from core.events import ChatEvent
from core.manifest import Workspace

__all__ = ["METADATA_EVENT_TYPE", "Lookup", "Messages", "Replied"]

METADATA_EVENT_TYPE = "c2a_message"
_NO_THREAD = frozenset({"thread_not_found"})
_PAGES = 10  # a bounded look for an earlier attempt: up to 2,000 messages

Lookup = Callable[[str], Awaitable[ChatEvent | None]]
"""The host's view of an event by id (`Engine.event`): who wrote the message being answered."""


@dataclass(frozen=True, slots=True)
class Replied:
    """The event an action answers, and the channel's setting for replies, for placement."""

    workspace: Workspace
    lookup: Lookup | None

    async def event(self, action: Post | Working) -> ChatEvent | None:
        if self.lookup is None or not action.in_reply_to:
            return None
        return await self.lookup(action.in_reply_to)

    def in_thread(self, conversation: str) -> bool:
        return self.workspace.channel(conversation.partition("/")[0]).reply_in_thread


@dataclass
class Messages:
    """Posts, finds, edits and deletes the agents' messages through `api`. Remembers, in this
    process, when a key was first tried and which parts of a split message already landed."""

    api: WebApi
    replied: Replied
    pacer: ChannelPacer
    clock: Clock
    lookback: timedelta = timedelta(days=1)
    drafts: WebApi | None = None  # a draft edit's calls, when they are to give up on a 429
    _first_try: dict[str, float] = field(default_factory=dict, init=False)
    _landed: dict[str, dict[int, str]] = field(default_factory=dict, init=False)

    async def post(self, action: Post) -> dict[str, Any]:
        """chat.postMessage (or chat.postEphemeral for visibility `ephemeral`, or a DM for
        visibility `dm`), one call per part, the parts that landed before skipped."""
        texts = self._render(action.agent, action.text, action.mentions)
        replied = await self.replied.event(action)
        if action.visibility == "ephemeral":
            return await self._ephemeral(action, replied, texts)
        where = await self._placement(action, replied)
        key = action.key
        self._first_try.setdefault(key, self.clock.now().timestamp())
        landed = self._landed.setdefault(key, {})
        try:
            for part, text in enumerate(texts):
                if part in landed:
                    continue
                if action.files and part == len(texts) - 1:
                    landed[part] = await self._share(action, where, text)
                else:
                    landed[part] = await self._part(action, where, text, part, len(texts))
        except PermanentSendError:
            self._forget(key)
            raise
        self._forget(key)
        return _posted(where, [landed[i] for i in sorted(landed)])

    async def find(self, action: Post) -> dict[str, Any] | None:
        """An earlier attempt of a post, from the channel's or thread's history around the time
        it was tried; None when it did not land (or is ephemeral). A thread Slack does not know
        (`thread_not_found`: its parent is gone and nothing was ever posted under it) holds no
        earlier attempt either."""
        if action.visibility == "ephemeral":
            return None
        replied = await self.replied.event(action)
        where = await self._placement(action, replied)
        params: dict[str, Any] = {"channel": where.channel, "limit": 200}
        params.update(oldest=f"{self._oldest(action, replied):.6f}")
        params["include_all_metadata"] = True
        method = "conversations.history"
        if where.thread_ts:
            method, params["ts"] = "conversations.replies", where.thread_ts
        found: dict[int, str] = {}
        texts = self._render(action.agent, action.text, action.mentions) if action.files else []
        parts = len(texts)
        for _ in range(_PAGES):
            page = await self.api.call(action.agent, method, params, read=True, ok=_NO_THREAD)
            for message in page.get("messages") or []:
                payload = self._ours(action, message)
                if payload is not None:
                    found[int(payload.get("part", 0))] = str(message["ts"])
                    parts = int(payload.get("parts", 1))
                elif texts and self._shared(action, message, texts[-1]):
                    found[len(texts) - 1] = str(message["ts"])
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                break
            params["cursor"] = cursor
        if not found:
            return None
        if len(found) < parts:
            self._landed.setdefault(action.key, {}).update(found)
            return None
        return _posted(where, [found[i] for i in sorted(found)])

    async def edit(self, action: Edit) -> dict[str, Any]:
        """chat.update with the new text, which must fit in one message. A draft (through
        `drafts`, which waits out no 429) that Slack does not take now is dropped at once
        (PermanentSendError): the streamed reply redraws later, more slowly."""
        channel = action.conversation.partition("/")[0]
        texts = self._render(action.agent, action.text, action.mentions)
        if len(texts) > 1:
            raise PermanentSendError(f"slack {action.agent}: an edit must fit in one message")
        params = {"channel": channel, "ts": action.message_id, "text": texts[0]}
        if not action.draft:
            await self.api.call(action.agent, "chat.update", params)
        else:
            try:
                await (self.drafts or self.api).call(action.agent, "chat.update", params)
            except TransientSendError as exc:
                raise PermanentSendError(f"{exc}; the draft is dropped for the next") from exc
        return {"messageId": action.message_id, "conversation": channel}

    async def delete(self, action: Delete) -> dict[str, Any]:
        """chat.delete; a message already gone is deleted."""
        channel = action.conversation.partition("/")[0]
        params = {"channel": channel, "ts": action.message_id}
        await self.api.call(action.agent, "chat.delete", params, ok={"message_not_found"})
        return {"messageId": action.message_id, "conversation": channel, "deleted": True}

    def _render(self, agent: str, text: str, mentions: tuple[str, ...]) -> list[str]:
        try:
            return render_message(text, mentions, self.replied.workspace)
        except RenderError as exc:
            raise PermanentSendError(f"slack {agent}: {exc}") from None

    async def _part(self, action: Post, where: Placement, text: str, part: int, parts: int) -> str:
        payload = {"idempotency_key": action.key, "part": part, "parts": parts}
        params: dict[str, Any] = {"channel": where.channel, "text": text, "link_names": False}
        params["metadata"] = {"event_type": METADATA_EVENT_TYPE, "event_payload": payload}
        if where.thread_ts:
            params["thread_ts"] = where.thread_ts
            params["reply_broadcast"] = where.broadcast
        await self.pacer.wait(where.channel)
        return str((await self.api.call(action.agent, "chat.postMessage", params))["ts"])

    def _forget(self, key: str) -> None:
        self._landed.pop(key, None)
        self._first_try.pop(key, None)

    async def _ephemeral(
        self, action: Post, replied: ChatEvent | None, texts: list[str]
    ) -> dict[str, Any]:
        user = _person(action)
        where = place(action, replied, reply_in_thread=self.replied.in_thread(action.conversation))
        ids = []
        for text in texts:
            params: dict[str, Any] = {"channel": where.channel, "user": user, "text": text}
            if where.thread_ts:
                params["thread_ts"] = where.thread_ts
            await self.pacer.wait(where.channel)
            answer = await self.api.call(action.agent, "chat.postEphemeral", params)
            ids.append(str(answer["message_ts"]))
        return {"messageId": ids[0], "messageIds": ids, "conversation": where.channel, "user": user}

    async def _placement(self, action: Post, replied: ChatEvent | None) -> Placement:
        where = place(action, replied, reply_in_thread=self.replied.in_thread(action.conversation))
        if action.visibility != "dm" or where.channel.startswith("D"):
            return where
        opened = await self.api.call(action.agent, "conversations.open", {"users": _person(action)})
        return Placement(str(opened["channel"]["id"]))

    def _oldest(self, action: Post, replied: ChatEvent | None) -> float:
        """Where to start looking: a little before the first try this process made, else the
        message being answered, else `lookback` ago."""
        if action.key in self._first_try:
            return self._first_try[action.key] - 300.0  # clocks differ; Slack's ts is Slack's
        ref = message_ref(action.in_reply_to)
        replied_ts = replied.message_id if replied else (ref[1] if ref else None)
        if replied_ts:
            return float(replied_ts)
        return (self.clock.now() - self.lookback).timestamp()

    def _ours(self, action: Post, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """The metadata payload of a message this agent posted under the action's key."""
        metadata = message.get("metadata") or {}
        payload = metadata.get("event_payload") or {}
        tagged = metadata.get("event_type") == METADATA_EVENT_TYPE
        ours = tagged and payload.get("idempotency_key") == action.key
        return dict(payload) if ours and self._mine(action, message) else None

    def _mine(self, action: Post, message: Mapping[str, Any]) -> bool:
        """Whether the agent's own bot posted `message`."""
        config = SlackAgent.of(self.replied.workspace.manifest.agents[action.agent])
        return config is not None and (
            message.get("user") == config.user_id
            or (config.bot_id is not None and message.get("bot_id") == config.bot_id)
        )

    def _shared(self, action: Post, message: Mapping[str, Any], comment: str) -> bool:
        """Whether `message` is the agent's own sharing of the post's files."""
        return self._mine(action, message) and is_shared(message, comment, action.files)

    async def _share(self, action: Post, where: Placement, comment: str) -> str:
        """The post's files shared with its last part as their comment; the message's ts, or
        the first file's id while Slack does not say the ts."""
        await self.pacer.wait(where.channel)
        client = self.api.clients.get(action.agent)
        shared = await share_files(client, action.agent, where, action.files, comment)
        return str(shared["ts"] or shared["fileIds"][0])


def _posted(where: Placement, ids: list[str]) -> dict[str, Any]:
    return {
        "messageId": ids[0],
        "messageIds": ids,
        "conversation": where.channel,
        "thread": where.thread_ts,
    }


def _person(action: Post) -> str:
    """Who a DM or an ephemeral message is for, as the host named them (`Post.person`)."""
    if action.person is None:
        raise PermanentSendError(
            f"slack {action.agent}: a {action.visibility} message names no person it is for"
        )
    return action.person
