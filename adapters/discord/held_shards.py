"""Discord shards split across processes on one ledger: each shard connects in the one process
holding its lease.

With several `c2a run` processes sharing a PostgreSQL ledger, every bot's shard (a plain,
unsharded bot is one shard, number 0) is offered to the run's leases under the name
`discord:<agent>:shard:<n>` (`shard_lease`). The process that takes the lease connects that
shard alone (one `AutoShardedClient` over that one shard, or the plain client); the one that
loses it (it could not renew in time) closes it with 4000, which keeps the session. A process
that dies stops renewing: once the lease expires another takes it, and its new connection
RESUMEs the session the ledger kept for that shard (`adapters.discord.sessions`), so Discord
replays what was sent since the last committed dispatch and the ledger drops what it already
holds; only a refused RESUME IDENTIFYs afresh (and catches up from history). A graceful stop
closes each shard and gives its lease up at once. On SQLite there are no leases and
`adapters.discord.bots.start_connections` connects everything.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Protocol

import discord

from adapters.discord.bots import Bots
from adapters.discord.live import DiscordAgentConnection
from adapters.discord.sharding import IdentifyTurns, Sharding

__all__ = ["HeldShards", "ShardLeases", "shard_lease"]


class ShardLeases(Protocol):
    """The run's leases, as the shards use them (`c2a.run_leases.HarnessLeases`).

    `offer` takes the lease `name` at once if it is free (calling `start`), and in a later
    round otherwise; it renews it within its lease time while held, and calls `stop` as soon as
    a renewal fails. `withdraw` calls `stop` if it is held and releases it at once."""

    async def offer(
        self, name: str, start: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None]]
    ) -> None: ...

    async def withdraw(self, name: str) -> None: ...


def shard_lease(agent: str, shard: int) -> str:
    """The lease under which one process connects `agent`'s bot's `shard`."""
    return f"discord:{agent}:shard:{shard}"


class HeldShards:
    """The shards of a workspace's `bots` this process holds, each its own connection."""

    def __init__(self, bots: Bots, leases: ShardLeases) -> None:
        self.bots = bots
        self.leases = leases
        self.connections: dict[str, DiscordAgentConnection] = {}  # by lease name
        self._offered: list[str] = []

    async def offer(self) -> None:
        """Offer every shard of every bot (connecting those taken now), then wait until the
        connections taken now are ready. Raises `ConnectionError` if one still held ends
        first."""
        for agent, token in self.bots.tokens.items():
            for shard, sharding in await self._shards(token):
                name = shard_lease(agent, shard)
                start = functools.partial(self._start, name, agent, sharding)
                stop = functools.partial(self._stop, name)
                self._offered.append(name)
                await self.leases.offer(name, start, stop)
        taken = list(self.connections.items())
        ready = await asyncio.gather(*(c.wait_ready() for _, c in taken), return_exceptions=True)
        for (name, connection), result in zip(taken, ready, strict=True):
            # A connection closed meanwhile because its lease went to another process is fine.
            if isinstance(result, BaseException) and self.connections.get(name) is connection:
                raise result

    async def close(self) -> None:
        """Close every shard held here and give its lease up, so another process takes it."""
        for name in self._offered:
            await self.leases.withdraw(name)
        self._offered.clear()

    async def _shards(self, token: str) -> list[tuple[int, Sharding | None]]:
        """Each shard of the bot of `token`, with the sharding that connects it alone."""
        sharding = self.bots.sharding
        if sharding is None:
            return [(0, None)]
        count = sharding.count or await recommended_count(token)
        ids = sharding.ids if sharding.ids is not None else range(count)
        turns = IdentifyTurns()  # the bot's shards here IDENTIFY 5 s apart, as in one client
        return [(n, Sharding(count, (n,), turns)) for n in ids]

    async def _start(self, name: str, agent: str, sharding: Sharding | None) -> None:
        connection = self.bots.connection(agent, sharding)
        self.connections[name] = connection
        connection.start()

    async def _stop(self, name: str) -> None:
        connection = self.connections.pop(name, None)
        if connection is not None:
            await connection.close()


async def recommended_count(token: str) -> int:
    """The shard count Discord recommends for the bot of `token` (`GET /gateway/bot`)."""
    client = discord.Client(intents=discord.Intents(guilds=True))
    try:
        await client.login(token)
        count, _, _ = await client.http.get_bot_gateway()
        return int(count)
    finally:
        await client.close()
