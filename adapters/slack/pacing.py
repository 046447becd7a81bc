"""Pacing of Slack posts: about one message a second per channel, as Slack asks of
`chat.postMessage`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

__all__ = ["ChannelPacer", "Sleep"]

Sleep = Callable[[float], Awaitable[None]]


class ChannelPacer:
    """About one message a second per channel, as Slack asks of `chat.postMessage`.

    `wait(channel)` returns when the channel's next message may go; messages to one channel
    are spaced `interval` apart, and no single wait is longer than that while no one else
    waits on the channel. `monotonic` and `sleep` are injectable for tests.
    """

    def __init__(
        self,
        interval: float = 1.0,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.interval = interval
        self._monotonic = monotonic
        self._sleep = sleep
        self._due: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def wait(self, channel: str) -> None:
        lock = self._locks.setdefault(channel, asyncio.Lock())
        async with lock:
            now = self._monotonic()
            due = self._due.get(channel, now)
            if due > now:
                await self._sleep(due - now)
            self._due[channel] = max(self._monotonic(), due) + self.interval
        if len(self._due) > 1000:  # forget channels that went quiet
            now = self._monotonic()
            for quiet in [c for c, d in self._due.items() if d < now]:
                del self._due[quiet]
                if not self._locks[quiet].locked():
                    del self._locks[quiet]
