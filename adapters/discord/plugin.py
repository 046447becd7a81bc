"""Discord as a registered platform: its normaliser, its reactions and its live side.

`connect` is used when an agent has a bot token variable (`agents.<id>.discord.token_env`);
every such variable must be set, checked before anything connects. Its start logs the sender
in and opens each bot's gateway (within `CONNECT_TIMEOUT` seconds), every bot's button presses
answering the engine's approvals and its `/c2a` answered on the engine
(`adapters.discord.commands`); its finish logs the sender out, after the outbox's last round.
When the run keeps leases (several processes on one ledger: the run's `options["leases"]`),
each shard connects only in the process holding its lease (`adapters.discord.held_shards`).
"""

from __future__ import annotations

import asyncio
import dataclasses

import discord

from adapters.discord.asks import listen_for_presses
from adapters.discord.bots import BotOptions, Bots, start_connections
from adapters.discord.commands import listen_for_commands
from adapters.discord.held_shards import HeldShards, ShardLeases
from adapters.discord.interactions import Interactions
from adapters.discord.live import DiscordAgentConnection
from adapters.discord.manifest import SECTION, DiscordAgent
from adapters.discord.normalise import normalise
from adapters.discord.repeats import REPEATS
from adapters.discord.secrets import SHAPES
from adapters.discord.send import DiscordSender
from core.command_answers import Commands
from core.errors import ManifestError
from core.markup import CHAT_MARKUP
from core.outbox import Sender
from core.platform import Platform, RunContext
from core.signals import unicode_reactions

__all__ = ["CONNECT_TIMEOUT", "DRAFT_LIMIT", "PLATFORM", "DiscordConnection"]

CONNECT_TIMEOUT = 30.0


class DiscordConnection:
    """The gateway connections of one workspace's bots and the sender they share."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.name = ctx.workspace.manifest.workspace
        self.agents: list[DiscordAgentConnection] = []
        self.leases: ShardLeases | None = ctx.options.get("leases")
        self.shards: HeldShards | None = None
        self._sender: DiscordSender | None = None
        self.interactions = Interactions()
        listen_for_presses(self.interactions, ctx.engine.approvals)
        listen_for_commands(self.interactions, Commands(ctx.engine, ctx.sink))

    @property
    def sender(self) -> Sender | None:
        return self._sender

    async def start(self) -> None:
        """Log in and open the gateways; ManifestError, saying what to check, when refused."""
        ctx = self.ctx
        try:
            self._sender = await DiscordSender.connect(ctx.workspace, environ=ctx.environ)
            how: BotOptions = {
                "environ": ctx.environ,
                "store": ctx.store,
                "clock": ctx.clock,
                "interactions": self.interactions,
            }
            async with asyncio.timeout(CONNECT_TIMEOUT):
                if self.leases is None:
                    self.agents = await start_connections(ctx.workspace, ctx.receive, **how)
                else:
                    bots = Bots.of(ctx.workspace, ctx.receive, **how)
                    self.shards = HeldShards(bots, self.leases)
                    await self.shards.offer()
        except (discord.LoginFailure, discord.HTTPException, OSError, TimeoutError) as exc:
            raise ManifestError(
                f"{self.name}: cannot connect to Discord ({type(exc).__name__}: {exc}); "
                "check the bot tokens (c2a discord invite) and the network"
            ) from None

    def ready(self) -> None:
        return None

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self.agents), return_exceptions=True)
        if self.shards is not None:
            await self.shards.close()

    async def finish(self) -> None:
        if self._sender is not None:
            await self._sender.close()


def connect(ctx: RunContext) -> DiscordConnection | None:
    """Discord for a workspace where an agent has a token variable; ManifestError when one
    of those variables is not set."""
    agents = ctx.workspace.manifest.agents.items()
    if not any((d := DiscordAgent.of(c)) and d.token_env for _, c in agents):
        return None
    variables = {a: d.token_env for a, c in agents if (d := DiscordAgent.of(c)) and d.token_env}
    missing = [f"{v} (agent {a})" for a, v in variables.items() if not ctx.environ.get(v)]
    if missing:
        raise ManifestError(
            f"{ctx.workspace.manifest.workspace}: Discord tokens not set in the environment: "
            f"{', '.join(missing)}; export them (docs/discord.md) or remove the agents' "
            "discord.token_env"
        )
    return DiscordConnection(ctx)


DRAFT_LIMIT = 1_800
"""The most characters a streamed reply's message grows to before it continues in a new one:
a message holds `MESSAGE_LIMIT` (2,000) once rendered, with room
for what rendering adds (escapes, links)."""

PLATFORM = Platform(
    name="discord",
    normalise=normalise,
    reactions=unicode_reactions(),
    manifest=SECTION,
    markup=dataclasses.replace(CHAT_MARKUP, bold="**"),  # `*x*` is italics on Discord
    secrets=SHAPES,
    connect=connect,
    streams_drafts=True,
    draft_limit=DRAFT_LIMIT,
    repeats=REPEATS,
)
