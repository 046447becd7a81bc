"""How an agent's bot splits its gateway into shards, as the manifest's `discord` keys ask.

No `shard_count` in the manifest: a plain `discord.Client`, one gateway connection per bot.
With one, an `AutoShardedClient`: `shard_count: auto` takes the count Discord recommends
(`GET /gateway/bot`), a number fixes it, and `shard_ids` runs only those shards in this process
(all of them when absent). Discord sends a guild's events on shard `(guild_id >> 22) %
shard_count` and DMs on shard 0 only; the manifest refuses `shard_ids` without the guild's.

Every shard of one bot feeds the same connection, so frames still reach the host one at a time
in arrival order; `ShardedClient` is the `AutoShardedClient` the live path builds on. Running
the other shards of a bot in another process needs that process to share the ledger, which a
SQLite store cannot: with SQLite, one process per store. With a shared PostgreSQL ledger each
shard is a client of its own in the process holding its lease (`adapters.discord.held_shards`),
and `IdentifyTurns` keeps one bot's IDENTIFYs in a process 5 s apart, as one client's are.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import discord

from adapters.discord.manifest import DiscordWorkspace

__all__ = ["DM_SHARD", "IDENTIFY_EVERY", "IdentifyTurns", "ShardedClient", "Sharding"]

DM_SHARD: Final = 0
"""The shard Discord sends direct messages on."""

IDENTIFY_EVERY: Final = 5.0
"""Seconds between two IDENTIFYs of one bot (Discord's limit, `max_concurrency` 1)."""


class IdentifyTurns:
    """One bot's IDENTIFYs in this process, one at a time and `every` seconds apart, for shards
    connected by clients of their own (a RESUME needs no turn). `now` and `sleep` are the
    clock's."""

    def __init__(
        self,
        every: float = IDENTIFY_EVERY,
        *,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.every = every
        self._now = now
        self._sleep = sleep
        self._lock = asyncio.Lock()
        self._last: float | None = None

    async def take(self) -> None:
        """Wait for this bot's next turn to IDENTIFY."""
        async with self._lock:
            if self._last is not None:
                wait = self._last + self.every - self._now()
                if wait > 0:
                    await self._sleep(wait)
            self._last = self._now()


@dataclass(frozen=True, slots=True)
class Sharding:
    """One bot's shards: `count` (`None`: Discord's recommendation) and the `ids` this process
    runs (`None`: all of them); `turns` pace the IDENTIFYs of a bot whose shards are clients of
    their own (None: discord.py paces a client's shards)."""

    count: int | None = None
    ids: tuple[int, ...] | None = None
    turns: IdentifyTurns | None = field(default=None, compare=False)

    @classmethod
    def from_manifest(cls, settings: DiscordWorkspace | None) -> Sharding | None:
        """The sharding the manifest asks for, or `None` for a plain client (no `shard_count`).

        The manifest has already checked the values (`adapters.discord.manifest.DiscordWorkspace`).
        """
        if settings is None or settings.shard_count is None:
            return None
        count = None if settings.shard_count == "auto" else settings.shard_count
        ids = tuple(settings.shard_ids) if settings.shard_ids is not None else None
        return cls(count, ids)

    def client_options(self) -> dict[str, Any]:
        """The `discord.AutoShardedClient` keyword arguments for these shards."""
        return {
            "shard_count": self.count,
            "shard_ids": list(self.ids) if self.ids is not None else None,
        }

    def receives_dms(self) -> bool:
        """Whether this process runs the shard DMs arrive on."""
        return self.ids is None or DM_SHARD in self.ids


class ShardedClient(discord.AutoShardedClient):
    """An `AutoShardedClient` that dials the configured gateway with an automatic count too,
    and whose `close` also stops the shards still connecting."""

    _launching: asyncio.Task[None] | None = None
    identify_turns: IdentifyTurns | None = None  # None: discord.py's own pacing

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        # discord.py waits 5 s before each IDENTIFY but a client's first; a client that runs
        # one of several shards of a bot in this process waits for the bot's turn instead.
        if self.identify_turns is None or not initial:
            await super().before_identify_hook(shard_id, initial=initial)
        else:
            await self.identify_turns.take()

    async def launch_shards(self) -> None:
        # discord.py connects an automatic count to the URL that GET /gateway/bot answers; take
        # only the count from it, so a sharded bot dials the same gateway as a plain one
        # (`DiscordWebSocket.DEFAULT_GATEWAY`, the manifest's `discord.gateway_url`).
        if self.shard_count is None:
            self.shard_count, _, _ = await self.http.get_bot_gateway()
        # Shards connect one after another, 5 s apart (Discord's IDENTIFY limit), and discord.py
        # retries a shard that fails to connect for ever, closed or not; `close` stops it here.
        self._launching = asyncio.ensure_future(super().launch_shards())
        try:
            await self._launching
        except asyncio.CancelledError:
            if not (self.is_closed() and self._launching.cancelled()):
                raise
        finally:
            self._launching = None

    async def close(self) -> None:
        """Stop launching shards, then close as discord.py does."""
        if self._launching is not None:
            self._launching.cancel()
        await super().close()
