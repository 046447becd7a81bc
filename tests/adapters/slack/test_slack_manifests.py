"""The Slack app manifests ask for exactly the scopes and events the code uses, and
`c2a slack manifest` prints a ready one for an agent."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import LOCAL, ROOT

from adapters.slack.live import BOT_EVENTS, EVENTS_PATH
from adapters.slack.scopes import (
    BOT_EVENT_SCOPES,
    COMMAND_SCOPES,
    METHOD_SCOPES,
    REQUIRED_SCOPES,
)
from c2a.slack_cli import app_manifest, register
from core.commands import COMMAND
from core.errors import ManifestError

MANIFESTS = {
    "socket": ROOT / "manifests" / "slack" / "app-manifest.yaml",
    "http": ROOT / "manifests" / "slack" / "app-manifest-http.yaml",
}
# Where Web API methods are called with a bot token.
SOURCES = [*sorted((ROOT / "adapters" / "slack").glob("*.py")), ROOT / "c2a" / "slack_cli.py"]
FAMILIES = ("auth", "chat", "reactions", "conversations", "assistant", "users", "usergroups")


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def called_methods() -> set[str]:
    """Web API method names the code names: string literals (`"chat.postMessage"`) and
    slack-sdk's typed calls (`client.auth_test(`)."""
    family = "|".join(FAMILIES)
    found: set[str] = set()
    for source in SOURCES:
        text = source.read_text(encoding="utf-8")
        found.update(re.findall(rf'"((?:{family})\.[a-zA-Z.]+)"', text))
        for name in re.findall(rf"\.((?:{family})_[a-zA-Z_]+)\(", text):
            found.add(name.replace("_", "."))
    return found


@pytest.mark.parametrize("mode", MANIFESTS)
def test_the_manifest_subscribes_exactly_the_events_that_have_listeners(mode: str) -> None:
    events = load(MANIFESTS[mode])["settings"]["event_subscriptions"]["bot_events"]
    assert len(events) == len(set(events))
    assert set(events) == set(BOT_EVENT_SCOPES)
    assert {event.split(".")[0] for event in events} == set(BOT_EVENTS)


@pytest.mark.parametrize("mode", MANIFESTS)
def test_the_manifest_asks_for_exactly_the_scopes_the_code_uses(mode: str) -> None:
    scopes = load(MANIFESTS[mode])["oauth_config"]["scopes"]["bot"]
    assert len(scopes) == len(set(scopes))
    assert set(scopes) == REQUIRED_SCOPES | COMMAND_SCOPES
    for method, needed in METHOD_SCOPES.items():
        assert needed <= set(scopes), method


def test_every_web_api_method_the_code_calls_has_its_scopes_listed() -> None:
    called = called_methods()
    assert {"chat.postMessage", "reactions.add", "conversations.history", "auth.test"} <= called
    assert called - set(BOT_EVENT_SCOPES) <= set(METHOD_SCOPES)


def test_the_two_manifests_differ_only_in_how_events_arrive() -> None:
    socket, http = load(MANIFESTS["socket"]), load(MANIFESTS["http"])
    assert socket["settings"]["socket_mode_enabled"] is True
    assert http["settings"]["socket_mode_enabled"] is False
    events_url = http["settings"]["event_subscriptions"].pop("request_url")
    assert events_url.startswith("https://")
    # Over HTTP the slash command is posted where the events are.
    assert http["features"]["slash_commands"][0].pop("url") == events_url
    http["settings"]["socket_mode_enabled"] = True
    # Buttons' presses arrive over Socket Mode; over HTTP at the events' Request URL.
    assert socket["settings"].pop("interactivity") == {"is_enabled": True}
    interactivity = http["settings"].pop("interactivity")
    assert interactivity == {"is_enabled": True, "request_url": events_url}
    assert http == socket


def cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="c2a")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.run(args)
    return status


def test_c2a_slack_manifest_prints_a_ready_socket_mode_manifest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli(["slack", "manifest", "--agent", "worker-1", "--manifest", str(LOCAL)]) == 0
    out = capsys.readouterr().out
    assert "#   SLACK_W1_BOT_TOKEN = the Bot User OAuth Token" in out
    assert "#   SLACK_W1_APP_TOKEN = an app-level token" in out
    data = yaml.safe_load(out)
    assert data["display_information"]["name"] == "worker-1"
    assert data["features"]["bot_user"]["display_name"] == "worker-1"
    assert data["settings"]["socket_mode_enabled"] is True
    assert set(data["oauth_config"]["scopes"]["bot"]) == REQUIRED_SCOPES | COMMAND_SCOPES
    (command,) = data["features"]["slash_commands"]
    assert command["command"] == COMMAND and "url" not in command


def test_c2a_slack_manifest_http_fills_the_agents_request_url(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["slack", "manifest", "--agent", "lead", "--http"]
    assert cli([*argv, "--request-url", "https://c2a.corp.example/"]) == 0
    data = yaml.safe_load(capsys.readouterr().out)
    events = data["settings"]["event_subscriptions"]
    assert events["request_url"] == "https://c2a.corp.example" + EVENTS_PATH.format(agent="lead")
    assert data["settings"]["interactivity"]["request_url"] == events["request_url"]
    assert data["settings"]["socket_mode_enabled"] is False
    (command,) = data["features"]["slash_commands"]
    assert (command["command"], command["url"]) == (COMMAND, events["request_url"])


def test_a_workspace_in_http_mode_gets_an_http_app_manifest_without_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = yaml.safe_load(LOCAL.read_text(encoding="utf-8"))
    workspace["slack"]["mode"] = "http"
    workspace["agents"]["lead"]["slack"]["signing_secret_env"] = "SLACK_LEAD_SIGNING_SECRET"
    path = tmp_path / "overhttp.yaml"
    path.write_text(yaml.safe_dump(workspace), encoding="utf-8")
    assert cli(["slack", "manifest", "--agent", "lead", "--manifest", str(path)]) == 0
    out = capsys.readouterr().out
    assert "#   SLACK_LEAD_SIGNING_SECRET = the app's Signing Secret" in out
    assert "app-level token" not in out
    settings = yaml.safe_load(out)["settings"]
    assert settings["socket_mode_enabled"] is False
    assert settings["event_subscriptions"]["request_url"].endswith("/slack/events/lead")


def test_c2a_slack_manifest_refuses_an_agent_the_workspace_lacks() -> None:
    with pytest.raises(ManifestError, match="no agent 'ghost'; agents: lead, worker-1, worker-2"):
        cli(["slack", "manifest", "--agent", "ghost", "--manifest", str(LOCAL)])
    with pytest.raises(ManifestError, match="lowercase"):
        app_manifest("Not An Id")
