"""`c2a slack`: print a ready Slack app manifest for one agent, and check the agents' tokens.

`register(subcommands)` adds the `slack` command to the `c2a` parser; each subcommand sets
`run`, which returns the exit status, as the other commands do.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from adapters.slack.live import EVENTS_PATH
from adapters.slack.manifest import SlackAgent, SlackWorkspace
from adapters.slack.webapi import verify
from c2a.cli_args import add_manifest
from c2a.platforms import load_workspace
from core.errors import ManifestError
from core.manifest import AGENT_ID
from core.yaml_safe import read_yaml

__all__ = ["MANIFESTS", "app_manifest", "register"]

MANIFESTS = Path(__file__).resolve().parent.parent / "manifests" / "slack"
REQUEST_URL_PLACEHOLDER = "https://c2a.example.com"
_NAME_CHARS = 35  # Slack's limit for an app's name


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `c2a slack manifest` and `c2a slack verify` to the command's subparsers."""
    slack = subcommands.add_parser("slack", help="Slack: app manifests, token checks")
    commands = slack.add_subparsers(dest="slack_command", required=True, metavar="COMMAND")

    manifest = commands.add_parser(
        "manifest", help="print a ready Slack app manifest for one agent (YAML)"
    )
    manifest.add_argument("--agent", required=True, help="the agent id; it names the app")
    manifest.add_argument(
        "--http",
        action="store_true",
        help="receive over the HTTP Events API, not Socket Mode (implied by --manifest when "
        "its slack.mode is http)",
    )
    manifest.add_argument(
        "--request-url",
        help=f"the host's public base URL for --http (default {REQUEST_URL_PLACEHOLDER}, "
        "a placeholder)",
    )
    add_manifest(
        manifest, "workspace manifest: check the agent exists, name its variables", required=False
    )
    manifest.set_defaults(run=_manifest)

    check = commands.add_parser(
        "verify", help="check every agent's bot token with auth.test against the manifest"
    )
    add_manifest(check)
    check.set_defaults(run=_verify)


def app_manifest(
    agent: str, *, http: bool = False, request_url: str | None = None
) -> dict[str, Any]:
    """The Slack app manifest for one agent: the shipped template with the agent's name, and
    for HTTP mode its Request URL (for its events and its `/c2a` command). Raises
    ManifestError for a bad agent id or a missing template."""
    if not re.match(AGENT_ID, agent):
        raise ManifestError(f"agent id {agent!r} must be lowercase letters, digits, '-' or '_'")
    path = MANIFESTS / ("app-manifest-http.yaml" if http else "app-manifest.yaml")
    data: dict[str, Any] = read_yaml(path)
    data["display_information"]["name"] = agent[:_NAME_CHARS]
    data["features"]["bot_user"]["display_name"] = agent
    if http:
        base = (request_url or REQUEST_URL_PLACEHOLDER).rstrip("/")
        url = base + EVENTS_PATH.format(agent=agent)
        data["settings"]["event_subscriptions"]["request_url"] = url
        data["settings"]["interactivity"]["request_url"] = url  # presses arrive there too
        for command in data["features"]["slash_commands"]:
            command["url"] = url  # and slash commands
    return data


def _manifest(args: argparse.Namespace) -> int:
    header = [f"# Slack app manifest for the c2a agent {args.agent}"]
    http: bool = args.http
    if args.manifest:
        workspace = load_workspace(args.manifest)
        agents = workspace.manifest.agents
        if args.agent not in agents:
            known = ", ".join(agents)
            raise ManifestError(f"{args.manifest}: no agent {args.agent!r}; agents: {known}")
        settings = SlackWorkspace.of(workspace.manifest)
        http = http or (settings is not None and settings.mode == "http")
        header += _variables(args.agent, SlackAgent.of(agents[args.agent]), http)
    if http and not args.request_url:
        header.append("# replace the placeholder request_url with the host's public URL")
    data = app_manifest(args.agent, http=http, request_url=args.request_url)
    sys.stdout.write("\n".join(header) + "\n")
    sys.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return 0


def _variables(agent: str, slack: SlackAgent | None, http: bool) -> list[str]:
    """Comment lines saying which variable each token goes into, from the workspace manifest."""
    wanted = [("bot_token_env", "the Bot User OAuth Token (xoxb-...)")]
    if http:
        wanted.append(("signing_secret_env", "the app's Signing Secret"))
    else:
        wanted.append(("app_token_env", "an app-level token (xapp-...) with connections:write"))
    lines = ["# after installing it, set:"]
    for key, what in wanted:
        variable = getattr(slack, key, None) if slack is not None else None
        name = variable or f"(the variable agents.{agent}.slack.{key} should name)"
        lines.append(f"#   {name} = {what}")
    return lines


def _verify(args: argparse.Namespace) -> int:
    workspace = load_workspace(args.manifest)
    found = asyncio.run(verify(workspace))
    for agent, data in found.items():
        print(f"agent {agent}: ok, Slack user {data.get('user_id')} in team {data.get('team_id')}")
    if not found:
        print("no agent names a Slack bot token variable (agents.<id>.slack.bot_token_env)")
    return 0
