"""A reply that appears as the model writes it: posted at its first words, redrawn in place as
it grows, finished with the whole text.

Every step goes through the agent's port (`core.agent_port`), which guards it. The first words
are posted by `ChatTools.reply_with_text` (policy, claims, send budget, idempotency key,
audit); the caller's `on_posted` runs then (the harness clears its typing indicator). While the
model writes, at most one redraw per `every` seconds is queued as a *draft* edit
(`AgentPort.edit` with a draft number): an outbox `edit` action marked `draft`, which the
platform shows on the page only, so the ledger never holds the half-written versions. The whole
text is the one real edit (`chat_edit_message`), recorded like any edit, once the first post
has landed; a reply written before its first post was queued is simply posted whole. A draft
or an edit that fails is only logged: it never posts a second message.

Only a platform that takes drafts streams (it says so: `core.platform.Platform.streams_drafts`,
passed down by the composition root); elsewhere the whole text is posted at the end.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

from harness_bridge.tools import ChatTools, ToolError

__all__ = ["StreamedReply"]

log = logging.getLogger(__name__)

EDIT_EVERY_S: Final = 0.4  # at most a few redraws a second
LANDED_WITHIN_S: Final = 30.0  # how long the final edit waits for the first post to land
_POLL_S: Final = 0.05


class StreamedReply:
    """One turn's reply to `event_ids`, fed the model's text piece by piece (`add`), then
    `finish`ed. `live` streams it (a platform that takes drafts); otherwise only `finish`
    posts."""

    def __init__(
        self,
        tools: ChatTools,
        event_ids: Sequence[str],
        *,
        live: bool,
        every: float = EDIT_EVERY_S,
        now: Callable[[], float] = time.monotonic,
        on_posted: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.tools = tools
        self.port = tools.port
        self.on_posted = on_posted
        self.event_ids = list(event_ids)
        self.live = live
        self.every = every
        self.now = now
        self.text = ""
        self.key: str | None = None
        self.drafts = 0
        self._posted = ""  # the text of the first post, as recorded
        self._shown = ""  # the text on the page, drafts included
        self._last = 0.0

    async def add(self, piece: str) -> None:
        """More of the model's text; posts or redraws when it is time."""
        self.text += piece
        if not self.live or not self.text.strip():
            return
        if self.key is None:
            await self._post(self.text)
        elif self.now() - self._last >= self.every:
            await self._draft()

    async def finish(self, fallback: str) -> str | None:
        """Post or complete the reply with the whole text (`fallback` if the model wrote
        nothing); returns the message's idempotency key, None when nothing was posted."""
        final = self.text.strip() or fallback
        if self.key is None:
            await self._post(final)
            return self.key
        if final != self._posted:
            await self._final_edit(final)
        return self.key

    async def _post(self, text: str) -> None:
        try:
            sent = await self.tools.reply_with_text(self.event_ids, text)
        except ToolError as exc:
            log.warning("reply of %s refused: %s", self.tools.agent, exc)
            self.live = False  # nothing to redraw; `finish` will try once more, whole
            return
        if sent is None:
            self.live = False
            return
        self.key = str(sent["idempotencyKey"])
        self._posted = self._shown = text.strip()
        self._last = self.now()
        if self.on_posted is not None:
            await self.on_posted()

    async def _draft(self) -> None:
        shown = self.text.strip()
        if shown == self._shown or self.key is None:
            return
        state = await self.port.message(self.key)
        if state is None or state.status != "sent" or not state.message_id:
            return  # not on the page yet: the next piece tries again
        self.drafts += 1
        await self.port.edit(self.key, shown, draft=self.drafts)
        self._shown, self._last = shown, self.now()

    async def _final_edit(self, final: str) -> None:
        """The whole text as the message's one recorded edit, once the post has landed."""
        assert self.key is not None
        deadline = self.now() + LANDED_WITHIN_S
        state = await self.port.message(self.key)
        while state is not None and state.status not in ("sent", "failed"):
            if self.now() >= deadline:
                break
            await asyncio.sleep(_POLL_S)
            state = await self.port.message(self.key)
        try:
            await self.tools.call("chat_edit_message", {"idempotencyKey": self.key, "text": final})
        except ToolError as exc:
            log.warning("the reply of %s was left unfinished: %s", self.tools.agent, exc)
            return
        self._posted = self._shown = final
