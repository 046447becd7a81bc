"""`c2a discord ...`: the Discord commands; `invite` prints the URL that adds an agent's bot to
a server, built from `manifests/discord/invite.yaml` and the agent's application id, and, when
the agent's bot token is set, registers the `/c2a` application command for its application.

`register(subcommands)` adds them to the `c2a` parser; each command raises `C2AError` (a
`ManifestError`) for what a person must fix, which the `c2a` command prints in one line.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping
from pathlib import Path

import discord
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from adapters.discord.clients import use_endpoints
from adapters.discord.commands import register_commands
from adapters.discord.manifest import DiscordAgent, DiscordWorkspace
from c2a.cli_args import add_manifest
from c2a.platforms import load_workspace
from core.errors import ManifestError
from core.manifest import Workspace
from core.yaml_safe import key_path, read_yaml

__all__ = [
    "INVITE_DEFINITION",
    "InviteDefinition",
    "invite_url",
    "load_invite_definition",
    "register",
    "register_slash_command",
]

_ROOT = Path(__file__).resolve().parents[1]
INVITE_DEFINITION = _ROOT / "manifests" / "discord" / "invite.yaml"
"""The invite definition shipped with c2a."""

_PORTAL = "https://discord.com/developers/applications"


class InviteDefinition(BaseModel):
    """The invite: scopes, the permission integer and the flags it sums, and the intents."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scopes: list[str] = Field(min_length=1)
    permissions: int = Field(ge=0)
    named: dict[str, str] = Field(min_length=1)
    never: dict[str, str] = Field(default_factory=dict)
    intents: dict[str, bool] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _integer_is_the_sum(self) -> InviteDefinition:
        unknown = [
            n for n in [*self.named, *self.never] if n not in discord.Permissions.VALID_FLAGS
        ]
        if unknown:
            raise ValueError(f"not Discord permission flags: {', '.join(unknown)}")
        total = self.flags().value
        if self.permissions != total:
            raise ValueError(
                f"permissions is {self.permissions}, but the flags under named sum to {total}"
            )
        forbidden = [n for n in self.never if getattr(self.flags(), n)]
        if forbidden:
            raise ValueError(f"named asks for what never forbids: {', '.join(forbidden)}")
        return self

    def flags(self) -> discord.Permissions:
        """The named permissions as discord.py flags."""
        return discord.Permissions(**dict.fromkeys(self.named, True))


def load_invite_definition(path: Path = INVITE_DEFINITION) -> InviteDefinition:
    """Read and check an invite definition; raises `ManifestError` naming the problem."""
    source = str(path)
    data = read_yaml(path)
    try:
        return InviteDefinition.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{key_path(e['loc'])}: " + str(e["msg"]).removeprefix("Value error, ")
            for e in exc.errors()
        )
        raise ManifestError(f"{source}: {problems}", {"file": source}) from None


def invite_url(workspace: Workspace, agent: str, definition: InviteDefinition) -> str:
    """The OAuth2 URL that adds `agent`'s bot with the definition's scopes and permissions,
    with the manifest's guild preselected. Raises `ManifestError` for an unknown agent, an
    agent without a Discord bot, or one whose `application_id` is missing."""
    manifest = workspace.manifest
    if agent not in manifest.agents:
        known = ", ".join(manifest.agents)
        raise ManifestError(f"no agent {agent!r} in the manifest; its agents are {known}")
    config = DiscordAgent.of(manifest.agents[agent])
    if config is None:
        raise ManifestError(
            f"agent {agent!r} has no Discord bot: add agents.{agent}.discord to the manifest",
            {"agent": agent},
        )
    if config.application_id is None:
        raise ManifestError(
            f"agent {agent!r} has no agents.{agent}.discord.application_id in the manifest: "
            f"copy it from {_PORTAL} > your application > General Information > Application ID",
            {"agent": agent, "key": f"agents.{agent}.discord.application_id"},
        )
    settings = DiscordWorkspace.of(manifest)
    guild = settings.guild_id if settings is not None else None
    return discord.utils.oauth_url(
        config.application_id,
        permissions=definition.flags(),
        scopes=definition.scopes,
        guild=discord.Object(int(guild)) if guild is not None else discord.utils.MISSING,
    )


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `c2a discord invite --agent NAME [--manifest M]` to the `c2a` command."""
    parser = subcommands.add_parser("discord", help="Discord: invite an agent's bot")
    commands = parser.add_subparsers(dest="discord_command", required=True, metavar="COMMAND")
    invite = commands.add_parser(
        "invite", help="print the URL that adds an agent's bot to the Discord server"
    )
    invite.add_argument("--agent", "-a", required=True, help="agent id from the manifest")
    # Required: an example's placeholder ids would make an invite for nobody's application.
    add_manifest(invite, "your workspace manifest (YAML)")
    invite.set_defaults(run=_invite)


def register_slash_command(
    workspace: Workspace, agent: str, environ: Mapping[str, str] | None = None
) -> str:
    """Register `/c2a` for `agent`'s application when its bot token variable is set (Discord
    at the manifest's `discord.api_url`, if any); returns the line saying what was done, or
    how to do it. Raises discord.py's `HTTPException` when Discord refuses."""
    config = DiscordAgent.of(workspace.manifest.agents[agent])
    env = os.environ if environ is None else environ
    token = env.get(config.token_env) if config is not None and config.token_env else None
    if config is None or config.application_id is None or not token:
        variable = config.token_env if config is not None and config.token_env else "its token"
        return f"set {variable} and run this again to register the /c2a command"
    settings = DiscordWorkspace.of(workspace.manifest)
    use_endpoints(settings.api_url if settings is not None else None)
    names = asyncio.run(register_commands(config.application_id, token))
    return f"registered /{', /'.join(names)} for {agent}'s application {config.application_id}"


def _invite(args: argparse.Namespace) -> int:
    workspace = load_workspace(args.manifest)
    definition = load_invite_definition()
    print(invite_url(workspace, args.agent, definition))
    print(register_slash_command(workspace, args.agent), file=sys.stderr)
    wanted = [name for name, on in definition.intents.items() if on]
    if wanted:
        print(
            f"then enable Bot > Privileged Gateway Intents: {', '.join(wanted)} "
            f"({_PORTAL}); see docs/discord.md",
            file=sys.stderr,
        )
    return 0
