"""The Discord invite: the shipped definition, and `c2a discord invite` printing its URL."""

from __future__ import annotations

import argparse
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import discord
import pytest
import yaml
from builders import GUILD, LOCAL

from adapters.discord.clients import agent_intents
from c2a.discord_cli import INVITE_DEFINITION, load_invite_definition, register
from core.errors import ManifestError

APPLICATION = "910000000000000001"


def test_the_permission_integer_is_the_sum_of_the_named_discord_flags() -> None:
    data = yaml.safe_load(INVITE_DEFINITION.read_text(encoding="utf-8"))

    total = sum(getattr(discord.Permissions, flag).flag for flag in data["named"])

    assert data["permissions"] == total == 274878024768
    assert discord.Permissions(data["permissions"]).mention_everyone is False


def test_the_invite_asks_for_exactly_what_an_agent_needs_and_never_mention_everyone() -> None:
    definition = load_invite_definition()

    assert definition.scopes == ["bot", "applications.commands"]
    assert sorted(definition.named.values()) == [
        "Add Reactions",
        "Attach Files",
        "Embed Links",
        "Read Message History",
        "Send Messages",
        "Send Messages in Threads",
        "View Channel",
    ]
    flags = definition.flags()
    assert not (flags.mention_everyone or flags.administrator or flags.manage_messages)
    assert "mention_everyone" in definition.never


def test_the_intents_listed_are_the_ones_the_live_connection_asks_for() -> None:
    intents = load_invite_definition().intents
    asked = agent_intents(message_content=True)

    assert intents == {"message_content": True, "server_members": False, "presence": False}
    assert asked.message_content and not asked.members and not asked.presences


@pytest.mark.parametrize("message_content", [True, False])
def test_an_agent_asks_for_guilds_messages_reactions_and_typing_in_guilds_and_dms(
    message_content: bool,
) -> None:
    asked = agent_intents(message_content=message_content)

    expected = {
        "guilds",
        "guild_messages",
        "dm_messages",
        "guild_reactions",
        "dm_reactions",
        "guild_typing",
        "dm_typing",
    }
    assert {name for name, on in asked if on} == expected | (
        {"message_content"} if message_content else set()
    )


def test_a_definition_whose_integer_is_not_the_sum_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load(INVITE_DEFINITION.read_text(encoding="utf-8"))
    data["named"]["mention_everyone"] = "Mention Everyone"
    path = tmp_path / "invite.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")

    with pytest.raises(ManifestError, match="flags under named sum to 274878155840"):
        load_invite_definition(path)


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="c2a")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.run(args)
    return status


def manifest_with_application(tmp_path: Path) -> Path:
    data = yaml.safe_load(LOCAL.read_text(encoding="utf-8"))
    data["agents"]["worker-1"]["discord"]["application_id"] = APPLICATION
    data["agents"]["lead"]["discord"].pop("application_id", None)
    path = tmp_path / "workspace.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def test_invite_prints_the_url_for_the_agents_application(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = manifest_with_application(tmp_path)

    assert run(["discord", "invite", "--agent", "worker-1", "--manifest", str(manifest)]) == 0

    out, err = capsys.readouterr()
    url = urlsplit(out.strip())
    assert (url.scheme, url.netloc, url.path) == ("https", "discord.com", "/oauth2/authorize")
    assert parse_qs(url.query) == {
        "client_id": [APPLICATION],
        "scope": ["bot applications.commands"],
        "permissions": ["274878024768"],
        "guild_id": [GUILD],
    }
    assert "message_content" in err
    assert "set DISCORD_W1_TOKEN and run this again to register the /c2a command" in err


def test_invite_needs_the_manifest_never_an_examples_placeholder_ids(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as refused:
        run(["discord", "invite", "--agent", "lead"])
    assert refused.value.code == 2
    assert "one of the arguments MANIFEST --manifest/-m is required" in capsys.readouterr().err


def test_invite_says_which_key_to_add_when_the_application_id_is_missing(
    tmp_path: Path,
) -> None:
    manifest = manifest_with_application(tmp_path)

    with pytest.raises(ManifestError) as missing:
        run(["discord", "invite", "--agent", "lead", "--manifest", str(manifest)])
    with pytest.raises(ManifestError, match="its agents are lead, worker-1, worker-2"):
        run(["discord", "invite", "--agent", "nobody", "--manifest", str(manifest)])

    assert "agents.lead.discord.application_id" in str(missing.value)
    assert "Application ID" in str(missing.value)
