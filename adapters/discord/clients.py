"""The discord.py side of one agent's bot: its intents, the endpoints and token it uses, and the
clients (plain or sharded) that hand every gateway frame and their readiness to a connection.

Each agent is its own Discord bot, so each gets its own `discord.Client`; the client is built
with debug events on, so `adapters.discord.resume`'s socket can give each raw message to the
connection, which owns the gateway session (`resume.SessionOwner`).

Sharding: when the manifest sets `discord.shard_count`, each bot runs a
`discord.AutoShardedClient` with the shard count and ids it asks for (see
`adapters.discord.sharding`), else a plain `discord.Client`; every shard's frames go to the one
connection.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final, Protocol

import discord
import discord.gateway
import discord.http
import yarl

from adapters.discord import resume
from adapters.discord.manifest import DiscordAgent
from adapters.discord.sharding import ShardedClient, Sharding
from core.errors import ManifestError
from core.manifest import Workspace

__all__ = [
    "RAW_ONLY",
    "ContentMode",
    "Owner",
    "agent_intents",
    "new_client",
    "read_tokens",
    "use_endpoints",
]


class ContentMode(StrEnum):
    """Whether a connection receives message text: `full`, or `mention_only` (no intent)."""

    FULL = "full"
    MENTION_ONLY = "mention_only"


class Owner(resume.SessionOwner, Protocol):
    """The connection a client belongs to: it owns the session, hears of readiness and takes
    the interactions."""

    def on_client_ready(self, *, resumed: bool) -> None:
        """discord.py is ready (`resumed`: by a RESUME of the kept session)."""
        ...

    async def on_client_interaction(self, interaction: discord.Interaction) -> None:
        """discord.py parsed an INTERACTION_CREATE (`adapters.discord.interactions`)."""
        ...


def agent_intents(*, message_content: bool) -> discord.Intents:
    """The gateway intents of an agent's bot: guilds, messages and reactions in guilds and DMs,
    typing, and Message Content when asked for. `members` (privileged) is not needed."""
    # discord.py's `messages`, `reactions` and `typing` each cover the guild and the DM intent.
    return discord.Intents(
        guilds=True, messages=True, reactions=True, typing=True, message_content=message_content
    )


def new_client(
    owner: Owner, mode: ContentMode, guild_ready_timeout: float, sharding: Sharding | None
) -> discord.Client:
    """A client for `owner`'s bot in `mode`: an `AutoShardedClient` over `sharding`'s shards,
    else a plain one. discord.py's message cache is off, and it does not parse the dispatches
    the connection reads from the raw frame (`RAW_ONLY`): the core keeps what it needs."""
    resume.install()
    options: dict[str, Any] = {
        "intents": agent_intents(message_content=mode is ContentMode.FULL),
        "guild_ready_timeout": guild_ready_timeout,
        "max_messages": None,
        "enable_debug_events": True,
    }
    client: discord.Client
    if sharding is None:
        client = _AgentClient(owner, **options)
    else:
        client = _ShardedAgentClient(owner, **options, **sharding.client_options())
        client.identify_turns = sharding.turns
    parsers = client._connection.parsers  # discord.py's name -> parser table, read per dispatch
    for name in RAW_ONLY:
        parsers[name] = _unparsed
    return client


RAW_ONLY: Final = frozenset(
    {
        "MESSAGE_CREATE",
        "MESSAGE_UPDATE",
        "MESSAGE_DELETE",
        "MESSAGE_DELETE_BULK",
        "MESSAGE_REACTION_ADD",
        "MESSAGE_REACTION_REMOVE",
        "MESSAGE_REACTION_REMOVE_ALL",
        "MESSAGE_REACTION_REMOVE_EMOJI",
        "TYPING_START",
    }
)
"""Dispatches discord.py need not parse: the connection reads them from the raw frame, and
discord.py would only build objects for a message cache that is off and events no one here
listens to (it still reads each frame's sequence, and parses guilds, channels, threads and
interactions, which the bots use)."""


def _unparsed(data: Any) -> None:
    """discord.py's parser for a dispatch in `RAW_ONLY`: nothing to do."""


def use_endpoints(api_url: str | None = None, gateway_url: str | None = None) -> None:
    """Point discord.py at another REST base and gateway (a rate-limit proxy, a test fake).

    discord.py keeps both in class attributes, `discord.http.Route.BASE` and
    `discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY`, so they apply to every client in the
    process, whichever workspace it serves. `None` leaves a value as it is. `api_url` is the
    REST base with the API version, as Discord's own `https://discord.com/api/v10`; a resumed
    session reconnects to the `resume_gateway_url` the gateway sent in READY. Raises
    `ManifestError` for a URL of the wrong scheme.
    """
    if api_url is not None:
        if yarl.URL(api_url).scheme not in ("http", "https"):
            raise ManifestError(
                f"discord.api_url must be an http(s) URL, not {api_url!r}",
                details={"key": "discord.api_url"},
            )
        discord.http.Route.BASE = api_url.rstrip("/")
    if gateway_url is not None:
        gateway = yarl.URL(gateway_url)
        if gateway.scheme not in ("ws", "wss"):
            raise ManifestError(
                f"discord.gateway_url must be a ws(s) URL, not {gateway_url!r}",
                details={"key": "discord.gateway_url"},
            )
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = gateway


def read_tokens(workspace: Workspace, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each agent's bot token, from the variable its `discord.token_env` names (`environ`,
    default `os.environ`); raises ManifestError naming every variable that is unset or empty."""
    env = os.environ if environ is None else environ
    tokens: dict[str, str] = {}
    missing: list[str] = []
    for agent, config in workspace.manifest.agents.items():
        bot = DiscordAgent.of(config)
        variable = bot.token_env if bot else None
        if variable is None:
            continue
        if env.get(variable):
            tokens[agent] = env[variable]
        else:
            missing.append(f"{variable} (agent {agent})")
    if missing:
        raise ManifestError(
            f"Discord tokens not set in the environment: {', '.join(missing)}",
            details={"missing": missing},
        )
    return tokens


class _Hooks:
    """What both client kinds share: the owner has the gateway session and its frames
    (`adapters.discord.resume`), hears when the client is ready or resumed, and gets the
    interactions discord.py parsed."""

    _c2a: Owner

    @property
    def session_owner(self) -> Owner:
        return self._c2a

    async def on_ready(self) -> None:
        self._c2a.on_client_ready(resumed=False)

    async def on_resumed(self) -> None:
        self._c2a.on_client_ready(resumed=True)

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        await self._c2a.on_client_interaction(interaction)


class _AgentClient(_Hooks, discord.Client):
    """A discord.Client that passes raw frames and readiness to its owner."""

    def __init__(self, owner: Owner, **options: Any) -> None:
        super().__init__(**options)
        self._c2a = owner


class _ShardedAgentClient(_Hooks, ShardedClient):
    """The same, sharded: every shard's frames go to the one owner."""

    def __init__(self, owner: Owner, **options: Any) -> None:
        super().__init__(**options)
        self._c2a = owner
