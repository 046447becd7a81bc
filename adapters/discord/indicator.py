"""The working indicator on Discord: typing, shown through discord.py's typing context (one
trigger, refreshed by discord.py) per agent and channel until it is cleared, the agent posts
there, or a hard timeout ends it."""

from __future__ import annotations

import asyncio
import contextlib

import discord

from adapters.discord.failures import Retry, raise_as

__all__ = ["Typing"]


class Typing:
    """Who is shown typing where (`tasks`, by agent and channel id); `timeout` is the longest
    typing is ever shown."""

    def __init__(self, retry: Retry, timeout: float) -> None:
        self.retry = retry
        self.timeout = timeout
        self.tasks: dict[tuple[str, int], asyncio.Task[None]] = {}

    async def start(
        self, agent: str, channel: discord.PartialMessageable, timeout_s: float
    ) -> dict[str, str]:
        """Show `agent` typing in `channel` for at most `timeout_s` (and `timeout`)."""
        where = channel.id
        if (agent, where) in self.tasks:
            return {"typing": "started"}
        timeout = self.timeout
        if 0 < timeout_s < timeout:
            timeout = float(timeout_s)
        stack = contextlib.AsyncExitStack()
        try:
            await self.retry(lambda: stack.enter_async_context(channel.typing()))
        except Exception as exc:
            raise_as(exc, f"typing in {where}", idempotent=True)
        task = asyncio.create_task(_hold(stack, timeout), name=f"c2a discord typing {agent}")
        self.tasks[agent, where] = task

        def forget(done: asyncio.Task[None]) -> None:
            if self.tasks.get((agent, where)) is done:
                del self.tasks[agent, where]

        task.add_done_callback(forget)
        return {"typing": "started"}

    async def stop(self, agent: str, channel_id: int) -> dict[str, str]:
        task = self.tasks.pop((agent, channel_id), None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        return {"typing": "stopped"}

    async def close(self) -> None:
        """Stop every indicator."""
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        self.tasks.clear()


async def _hold(stack: contextlib.AsyncExitStack, timeout: float) -> None:
    """Keep a typing context open until cancelled or `timeout` passes, then leave it."""
    async with stack:
        await asyncio.sleep(timeout)
