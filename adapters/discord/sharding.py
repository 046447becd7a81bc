"""How an agent's bot splits its gateway into shards, as the manifest's `discord` keys ask.

No `shard_count` in the manifest: a plain `discord.Client`, one gateway connection per bot.
With one, an `AutoShardedClient`: `shard_count: auto` takes the count Discord recommends
(`GET /gateway/bot`), a number fixes it, and `shard_ids` runs only those shards in this process
(all of them when absent). Discord sends a guild's events on shard `(guild_id >> 22) %
shard_count` and DMs on shard 0 only; the manifest refuses `shard_ids` without the guild's.

Every shard of one bot feeds the same connection, so frames still reach the host one at a time
in arrival order; `ShardedClient` is the `AutoShardedClient` the live path builds on. Running
the other shards of a bot in another process needs that process to share the ledger, which a
SQLite store cannot: with SQLite, one process per store.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Final

import discord

from adapters.discord.manifest import DiscordWorkspace

__all__ = ["DM_SHARD", "ShardedClient", "Sharding"]

DM_SHARD: Final = 0
"""The shard Discord sends direct messages on."""


@dataclass(frozen=True, slots=True)
class Sharding:
    """One bot's shards: `count` (`None`: Discord's recommendation) and the `ids` this process
    runs (`None`: all of them)."""

    count: int | None = None
    ids: tuple[int, ...] | None = None

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
