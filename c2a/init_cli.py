"""`c2a init`: write a commented workspace manifest for a new team, asking nothing that the
platforms can tell (Slack's `auth.test`, Discord's `users/@me` and application) when the tokens
are in the environment."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import discord
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from c2a.platforms import load_workspace
from core.errors import ManifestError

__all__ = ["discover", "register", "render_manifest"]

AGENT = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


def register(subcommands: Any) -> None:
    """Add `c2a init` to the command line."""
    init = subcommands.add_parser(
        "init", help="write a commented workspace manifest, filled in from tokens when present"
    )
    init.add_argument("--out", default="workspace.yaml", help="where to write (workspace.yaml)")
    init.add_argument("--workspace", default="team", help="a name for the workspace")
    init.add_argument(
        "--agents", default="lead,worker-1", help="agent ids, comma-separated; the first leads"
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.set_defaults(run=_init)


def env_names(agent: str) -> dict[str, str]:
    """The environment variables an agent's tokens are read from."""
    stem = agent.upper().replace("-", "_")
    return {
        "slack_bot": f"SLACK_{stem}_BOT_TOKEN",
        "slack_app": f"SLACK_{stem}_APP_TOKEN",
        "discord": f"DISCORD_{stem}_TOKEN",
    }


async def discover(
    agents: Sequence[str],
    environ: Mapping[str, str],
    *,
    slack_api_url: str | None = None,
) -> dict[str, dict[str, str]]:
    """What the platforms say about each agent whose tokens are set: Slack user, bot and team
    ids; Discord user and application ids. Raises ManifestError with one line for a token a
    platform refuses."""
    found: dict[str, dict[str, str]] = {}
    for agent in agents:
        names = env_names(agent)
        facts: dict[str, str] = {}
        token = environ.get(names["slack_bot"])
        if token:
            client = AsyncWebClient(token=token, base_url=slack_api_url or "https://slack.com/api/")
            try:
                answer = await client.auth_test()
            except SlackApiError as exc:
                raise ManifestError(
                    f"{names['slack_bot']}: Slack refused the token ({exc.response['error']})"
                ) from None
            facts.update(
                slack_user_id=str(answer["user_id"]),
                slack_bot_id=str(answer.get("bot_id") or ""),
                slack_team_id=str(answer["team_id"]),
            )
        token = environ.get(names["discord"])
        if token:
            client_d = discord.Client(intents=discord.Intents.none())
            try:
                await client_d.login(token)
                application = await client_d.application_info()
                assert client_d.user is not None
                facts.update(
                    discord_user_id=str(client_d.user.id),
                    discord_application_id=str(application.id),
                )
            except discord.LoginFailure:
                raise ManifestError(f"{names['discord']}: Discord refused the token") from None
            finally:
                await client_d.close()
        found[agent] = facts
    return found


def render_manifest(
    workspace: str, agents: Sequence[str], facts: Mapping[str, Mapping[str, str]]
) -> str:
    """The manifest text: discovered values filled in, the rest as commented placeholders."""
    team = next((f["slack_team_id"] for f in facts.values() if f.get("slack_team_id")), None)
    lines = [
        "# c2a workspace manifest: docs/manifest.md explains every key.",
        "# Tokens never go here, only the names of the environment variables holding them.",
        "version: 1",
        f"workspace: {workspace}",
    ]
    lines.append(
        f"slack: {{team_id: {team}}}" if team else "# slack: {team_id: T...}   # auth.test tells it"
    )
    lines.append(
        '# discord: {guild_id: "..."}   # Developer Mode > right-click the server > Copy ID'
    )
    lines.append("# webchat: {}   # the local web chat instead: nothing to sign up for")
    lines.append("agents:")
    for index, agent in enumerate(agents):
        names = env_names(agent)
        known = facts.get(agent, {})
        lines.append(f"  {agent}:")
        lines.append("    lead: true   # escalations go here" if index == 0 else "    lead: false")
        if known.get("slack_user_id"):
            bot = f", bot_id: {known['slack_bot_id']}" if known.get("slack_bot_id") else ""
            lines.append(
                f"    slack: {{user_id: {known['slack_user_id']}{bot}, "
                f"bot_token_env: {names['slack_bot']}, app_token_env: {names['slack_app']}}}"
            )
        else:
            lines.append(
                f"    # slack: {{user_id: U..., bot_token_env: {names['slack_bot']}, "
                f"app_token_env: {names['slack_app']}}}"
            )
        if known.get("discord_user_id"):
            lines.append(
                f'    discord: {{user_id: "{known["discord_user_id"]}", application_id: '
                f'"{known["discord_application_id"]}", token_env: {names["discord"]}}}'
            )
        else:
            lines.append(f'    # discord: {{user_id: "...", token_env: {names["discord"]}}}')
        lines.append(
            '    # harness: {backend: openai, base_url: "http://127.0.0.1:11434/v1", '
            'model: "qwen2.5:7b"}   # docs/harnesses.md'
        )
        lines.append("    # approvers: [U...]   # who may mute or stop it and approve its asks")
    lines.append("roles: {}                       # e.g. backend: {slack_usergroups: [S...]}")
    lines.append("channels: {}                    # per-channel overrides: docs/manifest.md")
    return "\n".join(lines) + "\n"


def _init(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and not args.force:
        raise ManifestError(f"{out} exists; pass --force to overwrite it")
    agents = [a.strip() for a in str(args.agents).split(",") if a.strip()]
    bad = [a for a in agents if not AGENT.match(a)]
    if not agents or bad:
        raise ManifestError(f"--agents: ids must be lowercase letters, digits, '-' or '_' ({bad})")
    facts = asyncio.run(discover(agents, os.environ))
    out.write_text(render_manifest(args.workspace, agents, facts), encoding="utf-8")
    load_workspace(out)  # what was written is a valid manifest
    known = sum(1 for f in facts.values() if f)
    print(f"wrote {out}: {len(agents)} agent(s), {known} filled in from their tokens")
    print(f"next: c2a check {out}, then c2a run {out}")
    return 0
