"""Handing one connection's dispatches to the host: in the order they came, several at once.

`HandOver.run` takes the connection's queued items one by one and starts handing each frame
over (`hand_over`, which returns once the event is committed) without waiting for the one
before to be committed: up to `AT_ONCE` behind the oldest still open, and one more waiting for
room. The host queues an
event for its ledger before its first suspension (`adapters.Receive`), and tasks start in the
order they are made, so frames handed over in order are committed in order, in shared
transactions: an edit never overtakes the message it edits, and one connection is not held to
one commit per frame.

A session mark is kept (`keep`) only once its frame and every frame before it are handled, so
a kept mark never runs ahead of the ledger. Marks are kept when the connection falls quiet (no
frame waiting behind the handled one) and at least every `KEEP_EVERY` frames under load: a
mark that lags is harmless (RESUME replays what it lags by, and the ledger drops the repeats),
and each kept mark is a write. A frame whose hand-over failed (logged by `hand_over`) does not
move the mark; the next handled frame does, as before. The READY of a session that replaced a
lost one waits until everything before it is handled, then catches up from history
(`catch_up`) before anything after it is handed over.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Final

from adapters.discord.frames import Item
from core.store import GatewaySession

__all__ = ["AT_ONCE", "KEEP_EVERY", "HandOver"]

AT_ONCE: Final = 32
"""Frames of one connection handed over behind the oldest not yet handled, at most: a burst's
worth, so the host commits it in a few transactions, not one a frame."""

KEEP_EVERY: Final = 64
"""Under steady load, a mark is kept at least once in this many handled frames."""

_Handed = tuple[asyncio.Task[bool] | None, Item]


class HandOver:
    """One connection's frames, from its queue (`frames`) to the host, in order."""

    def __init__(
        self,
        frames: asyncio.Queue[Item],
        hand_over: Callable[[dict[str, Any]], Coroutine[Any, Any, bool]],
        keep: Callable[[GatewaySession], Awaitable[None]],
        catch_up: Callable[[str], Awaitable[None]],
    ) -> None:
        self.frames = frames
        self._hand_over = hand_over
        self._keep = keep
        self._catch_up = catch_up
        self._handed: asyncio.Queue[_Handed] = asyncio.Queue(AT_ONCE)

    async def run(self) -> None:
        """Hand frames over until cancelled; each queued item is `task_done` once handled (its
        mark kept, or due with the next one), so `frames.join()` waits for all of them."""
        settler = asyncio.create_task(self._settle())
        try:
            while True:
                item = await self.frames.get()
                if item.catch_up_since is not None:
                    await self._handed.join()  # what came before is in the ledger first
                    await self._catch_up(item.catch_up_since)
                task = None
                if item.frame is not None:
                    task = asyncio.create_task(self._hand_over(item.frame))
                await self._handed.put((task, item))
        finally:
            settler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await settler
            while not self._handed.empty():  # the host commits what it was given regardless
                task, _ = self._handed.get_nowait()
                if task is not None:
                    task.cancel()

    async def _settle(self) -> None:
        """Wait for each handed frame in order; keep the newest handled mark when nothing is
        waiting behind it, or every `KEEP_EVERY` frames."""
        due: GatewaySession | None = None
        since_kept = 0
        while True:
            task, item = await self._handed.get()
            try:
                if task is None or await task:
                    due = item.mark
                since_kept += 1
                if due is not None and (self._handed.empty() or since_kept >= KEEP_EVERY):
                    await self._keep(due)
                    due, since_kept = None, 0
            finally:
                self._handed.task_done()
                self.frames.task_done()
