"""The web chat's side of the outbox: agents' messages, reactions, edits, deletes and typing.

It implements `core.outbox.Sender` on a running `WebChat`. Sending is idempotent by the
action's key: a retried `send` finds the message it already posted (`find`, and `send` itself
checks first), so the page never shows one answer twice. Mentions are only those the agent
chose (`agent:<id>`, `role:<name>`, `user:<name>`), never names its text happens to contain.
A reply stays where the message it answers is (its thread, if any) and points at it. A status
signal replaces the agent's earlier status reaction on the same message, as on Slack.

An edit marked `draft` is a reply being streamed as the model writes it: it is shown on the page
only, never recorded or handed to the host, so the ledger keeps only the message as posted and
its final edit. A draft, like any edit, changes only a message that exists; it never posts one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.webchat.history import Message
from adapters.webchat.server import WebChat
from core.errors import PermanentSendError
from core.signals import GlyphMap, Signal, superseded_by

__all__ = ["WebchatSender"]


class WebchatSender:
    """Performs outbox actions whose platform is `webchat`."""

    def __init__(self, chat: WebChat, glyphs: GlyphMap):
        """`glyphs`: the workspace's (`Workspace.glyphs`)."""
        self.chat = chat
        self.glyphs = glyphs

    async def send(self, action: Mapping[str, Any]) -> dict[str, Any]:
        kind = action.get("action")
        agent = str(action.get("agent"))
        if agent not in self.chat.agents:
            raise PermanentSendError(f"webchat: {agent!r} is not an agent here")
        if kind == "send":
            return await self._post(agent, action)
        if kind == "react":
            return await self._react(agent, action)
        if kind == "typing":
            on = action.get("state") != "stop"
            await self.chat.typing(agent, str(action["conversation"]), action.get("thread"), on)
            return {}
        if kind in ("edit", "delete"):
            message_id = self._message_id(action)
            if self.chat.history.messages[message_id].user != agent:
                raise PermanentSendError(f"webchat: {agent} can only {kind} its own messages")
            if kind == "edit" and action.get("draft"):
                return await self._draft(message_id, str(action["text"]))
            fields = {"text": str(action["text"])} if kind == "edit" else {}
            await self.chat.change(kind, agent, message_id, **fields)
            return {"messageId": message_id}
        raise PermanentSendError(f"webchat cannot perform action {kind!r}")

    async def find(self, action: Mapping[str, Any]) -> dict[str, Any] | None:
        """The message an earlier attempt of a `send` posted, or None."""
        if action.get("action") != "send":
            return None
        message_id = self.chat.history.by_key.get(str(action.get("idempotencyKey")))
        return None if message_id is None else {"messageId": message_id}

    async def _post(self, agent: str, action: Mapping[str, Any]) -> dict[str, Any]:
        key = str(action["idempotencyKey"])
        earlier = await self.find(action)
        if earlier is not None:
            return earlier
        channel, thread = str(action["conversation"]), action.get("thread")
        answered = self._answered(action)
        if answered is not None and thread is None:
            thread = answered.thread
        users: list[str] = []
        roles: list[str] = []
        for recipient in action.get("mentions") or []:
            kind, _, name = str(recipient).partition(":")
            (roles if kind == "role" else users).append(name)
        message = await self.chat.say(
            agent,
            channel,
            str(action["text"]),
            thread=thread,
            reply_to=answered.id if answered is not None else None,
            key=key,
            mentions={"users": users, "roles": roles, "broadcast": []},
        )
        return {"messageId": message.id}

    async def _react(self, agent: str, action: Mapping[str, Any]) -> dict[str, Any]:
        message_id = self._message_id(action)
        message = self.chat.history.messages[message_id]
        signal = Signal(str(action["signal"]))
        glyph = self.glyphs.native("webchat", signal)
        for older in superseded_by(signal):
            old = self.glyphs.native("webchat", older)
            if agent in message.reactions.get(old, []):
                await self.chat.change("reaction_removed", agent, message_id, emoji=old)
        if agent not in message.reactions.get(glyph, []):
            await self.chat.change("reaction_added", agent, message_id, emoji=glyph)
        return {"messageId": message_id, "emoji": glyph}

    async def _draft(self, message_id: str, text: str) -> dict[str, Any]:
        """Redraw a message being written, on the page only (nothing recorded)."""
        message = self.chat.history.messages[message_id]
        if message.deleted:
            raise PermanentSendError(f"webchat: message {message_id} was deleted")
        await self.chat.show_draft(message, text)
        return {"messageId": message_id}

    def _message_id(self, action: Mapping[str, Any]) -> str:
        message_id = str(action.get("messageId"))
        if message_id not in self.chat.history.messages:
            raise PermanentSendError(f"webchat: no message {message_id}")
        return message_id

    def _answered(self, action: Mapping[str, Any]) -> Message | None:
        """The message an `inReplyTo` event id names, if it is one of this chat's."""
        event = action.get("inReplyTo")
        prefix = f"webchat:{self.chat.workspace}:"
        if not isinstance(event, str) or not event.startswith(prefix):
            return None
        message_id = event.removeprefix(prefix).split("~", 1)[0].split("+", 1)[0]
        return self.chat.history.messages.get(message_id)
