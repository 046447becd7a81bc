"""A workspace's bots on the gateway: what every agent's connection shares, and starting them.

`Bots` reads the manifest's `discord` keys and the bots' tokens once and makes each agent's
`DiscordAgentConnection` over the shards asked for; `start_connections` connects every bot in
this process, as one process running a workspace does (with several processes on one ledger,
`adapters.discord.held_shards` connects only the shards whose leases this process holds).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Required, TypedDict, Unpack

from adapters import Receive
from adapters.discord.clients import read_tokens, use_endpoints
from adapters.discord.interactions import Interactions
from adapters.discord.live import DiscordAgentConnection
from adapters.discord.manifest import DiscordWorkspace
from adapters.discord.sharding import DM_SHARD, Sharding
from core.clock import Clock
from core.manifest import Workspace
from core.store import Store

__all__ = ["BotOptions", "Bots", "start_connections"]

log = logging.getLogger("adapters.discord.live")  # where the connections log


class BotOptions(TypedDict, total=False):
    """How a workspace's bots connect: the environment their token variables are read from
    (default `os.environ`), discord.py's `guild_ready_timeout` (default 2 s), the ledger their
    sessions are kept in (None: none kept), the clock stamping them, and where interactions
    go."""

    environ: Mapping[str, str] | None
    guild_ready_timeout: float
    store: Store | None
    clock: Required[Clock]
    interactions: Interactions | None


@dataclass(frozen=True, slots=True)
class Bots:
    """Every agent's bot `tokens` (never logged), the `sharding` the manifest asks for, and
    what each of their connections is given."""

    tokens: Mapping[str, str]
    sharding: Sharding | None
    settings: DiscordWorkspace | None
    receive: Receive
    guild_ready_timeout: float
    store: Store | None
    clock: Clock
    interactions: Interactions | None

    @classmethod
    def of(cls, workspace: Workspace, receive: Receive, **how: Unpack[BotOptions]) -> Bots:
        """The bots of `workspace`, with `how` (`BotOptions`); the manifest's `discord.api_url`
        and `gateway_url`, when set, are applied with `use_endpoints` (process-wide). Raises
        `ManifestError` naming every token variable that is unset or empty."""
        tokens = read_tokens(workspace, how.get("environ"))
        settings = DiscordWorkspace.of(workspace.manifest)
        if settings is not None:
            use_endpoints(settings.api_url, settings.gateway_url)
        sharding = Sharding.from_manifest(settings)
        return cls(
            tokens,
            sharding,
            settings,
            receive,
            how.get("guild_ready_timeout", 2.0),
            how.get("store"),
            how["clock"],
            how.get("interactions"),
        )

    def connection(self, agent: str, sharding: Sharding | None) -> DiscordAgentConnection:
        """`agent`'s bot over `sharding`'s shards (None: a plain client), not yet started."""
        settings = self.settings
        return DiscordAgentConnection(
            agent,
            self.tokens[agent],
            self.receive,
            guild_id=settings.guild_id if settings is not None else None,
            guild_ready_timeout=self.guild_ready_timeout,
            sharding=sharding,
            store=self.store,
            clock=self.clock,
            catch_up=settings.catch_up if settings is not None else None,
            interactions=self.interactions,
        )


async def start_connections(
    workspace: Workspace, receive: Receive, **how: Unpack[BotOptions]
) -> list[DiscordAgentConnection]:
    """Connect every agent that has a Discord `token_env`, and wait until all are ready.

    The bots are `Bots.of` these arguments: the manifest's `shard_count` and `shard_ids` make
    every bot an `AutoShardedClient` over those shards. With a `store` (the ledger, open) every bot
    resumes its kept gateway session, or catches up from history within the manifest's
    `discord.catch_up` window; interactions go to `interactions`. Raises `ManifestError` naming
    every variable that is unset or empty before connecting anything, and `ConnectionError` if
    a connection ends before it is ready (the others are closed).
    Unbounded: callers put it under `asyncio.timeout`; cancelled, it closes what it started.
    """
    bots = Bots.of(workspace, receive, **how)
    if bots.sharding is not None and not bots.sharding.receives_dms():
        for agent in bots.tokens:
            log.warning(
                "discord agent %s: shard_ids %s leave out shard %d, so no DMs reach this process",
                agent,
                list(bots.sharding.ids or ()),
                DM_SHARD,
            )
    connections = [bots.connection(agent, bots.sharding) for agent in bots.tokens]
    try:
        for connection in connections:
            connection.start()
        await asyncio.gather(*(c.wait_ready() for c in connections))
    except BaseException:
        await asyncio.gather(*(c.close() for c in connections))
        raise
    return connections
