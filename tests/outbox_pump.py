"""The outbox driven as `c2a run` drives it, for tests of a whole path: every due action sent
every few milliseconds while a block runs."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from core.outbox import Outbox

__all__ = ["pumped"]


@contextlib.asynccontextmanager
async def pumped(outbox: Outbox, every_s: float = 0.02) -> AsyncIterator[None]:
    """Drain `outbox` every `every_s` seconds until the block ends."""

    async def pump() -> None:
        while True:
            await outbox.drain()
            await asyncio.sleep(every_s)

    pumping = asyncio.create_task(pump())
    try:
        yield
    finally:
        pumping.cancel()
        await asyncio.gather(pumping, return_exceptions=True)
