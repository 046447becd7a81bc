"""What the agents show on Slack besides messages: signal reactions (the workspace's glyph,
the status reactions it supersedes taken off) and the working indicator, which Slack shows as
the assistant thread status, only outside DMs: in the event's thread, or the thread the reply
opens (the event's message)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from adapters.slack.glyphs import normalise_emoji
from adapters.slack.posts import Replied
from adapters.slack.render import place
from adapters.slack.webapi import WebApi
from core.actions import React, Unreact, Working
from core.errors import PermanentSendError
from core.signals import GlyphMap, Signal, superseded_by, taken_off
from core.state_recent import Recent

__all__ = ["REMEMBERED", "Reactions"]

REMEMBERED: Final = 4096
"""Messages whose placed signals are remembered; the oldest is forgotten past it (a signal on
it then takes off every status it supersedes, as a fresh process does)."""


class Reactions:
    """Reactions and the thread status through `api`. Remembers, in this process, which signal
    reactions each agent placed on the newest `REMEMBERED` messages, to take off only those a
    new signal supersedes (every candidate when it knows of none)."""

    def __init__(self, api: WebApi, glyphs: GlyphMap, replied: Replied) -> None:
        self.api = api
        self.glyphs = glyphs
        self.replied = replied
        self._placed: Recent[tuple[str, str, str], set[Signal]] = Recent(REMEMBERED)

    async def react(self, action: React) -> dict[str, Any]:
        """reactions.add, then reactions.remove of the superseded signals' glyphs."""
        agent, ts = action.agent, action.message_id
        channel = action.conversation.partition("/")[0]
        signal = action.signal
        if signal is not None:
            name = self.glyphs.native("slack", signal)
        else:
            name = normalise_emoji(str(action.emoji))
        params = {"channel": channel, "timestamp": ts}
        await self.api.call(
            agent, "reactions.add", {**params, "name": name}, ok={"already_reacted"}
        )
        removed: list[str] = []
        if signal is not None:
            placed = self._placed.held((agent, channel, ts))
            if placed is None:
                placed = self._placed.hold((agent, channel, ts), set())
            # What the host knows is placed, else what this process placed, else every candidate.
            stale = taken_off(signal, action.placed)
            if stale is None:
                stale = superseded_by(signal) & placed if placed else superseded_by(signal)
            for old in sorted(stale):
                glyph = self.glyphs.native("slack", old)
                ok = {"no_reaction"}
                await self.api.call(agent, "reactions.remove", {**params, "name": glyph}, ok=ok)
                removed.append(glyph)
            placed.difference_update(stale)
            placed.add(signal)
        return {"messageId": ts, "reaction": name, "removed": removed}

    async def unreact(self, action: Unreact) -> dict[str, Any]:
        """reactions.remove of the signal's glyph; done already when it is not there."""
        agent, ts = action.agent, action.message_id
        channel = action.conversation.partition("/")[0]
        glyph = self.glyphs.native("slack", action.signal)
        params = {"channel": channel, "timestamp": ts, "name": glyph}
        await self.api.call(agent, "reactions.remove", params, ok={"no_reaction"})
        placed = self._placed.held((agent, channel, ts))
        if placed is not None:
            placed.discard(action.signal)
        return {"messageId": ts, "removed": [glyph]}

    async def status(self, action: Working) -> dict[str, Any]:
        """assistant.threads.setStatus with the status words, or `""` to clear it; nothing in a
        DM, where Slack shows no thread status."""
        if action.conversation_kind == "dm":
            return {}
        thread = action.thread or action.message_id  # the thread the reply opens
        replied = await self.replied.event(action)
        where = place(replace(action, thread=thread), replied, reply_in_thread=True)
        if where.thread_ts is None:
            raise PermanentSendError(
                f"slack {action.agent}: a status is shown in a thread; none given"
            )
        status = action.status if action.on else ""
        params = {"channel_id": where.channel, "thread_ts": where.thread_ts, "status": status}
        await self.api.call(action.agent, "assistant.threads.setStatus", params)
        return {"status": status, "conversation": where.channel, "thread": where.thread_ts}
