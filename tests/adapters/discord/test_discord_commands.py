"""`/c2a` as a Discord application command: its definition reads back as core's commands, a
Discord message link is read for `why`, and `c2a discord invite` registers it with one bulk
overwrite against the fake Discord when the agent's token is set."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes.discord_commands import FakeDiscordWithCommands
from test_discord_invite import APPLICATION, manifest_with_application, run

from adapters.discord.commands import (
    APPLICATION_COMMANDS,
    command_text,
    message_link,
    register_commands,
)
from core.commands import Leave, Mute, Status, Why, parse

TOKEN = "discord-token-for-tests"


def chosen(name: str, **options: str) -> dict[str, Any]:
    """An application command interaction's `data`, as Discord sends it."""
    given = [{"type": 3, "name": key, "value": value} for key, value in options.items()]
    return {
        "id": "1",
        "name": "c2a",
        "type": 1,
        "options": [{"type": 1, "name": name, "options": given}],
    }


@pytest.mark.parametrize(
    ("data", "command"),
    [
        (chosen("status"), Status()),
        (
            chosen("why", link="https://discord.com/channels/1/2/3"),
            Why("https://discord.com/channels/1/2/3"),
        ),
        (chosen("mute", duration="30m", agent="worker-1"), Mute("worker-1", timedelta(minutes=30))),
        (chosen("mute", agent="worker-1"), Mute("worker-1")),
        (chosen("leave", agent="lead"), Leave("lead")),
    ],
)
def test_an_interaction_s_options_read_back_as_core_s_command(
    data: dict[str, Any], command: object
) -> None:
    assert parse(command_text(data)) == command


def test_every_subcommand_is_a_command_core_reads() -> None:
    (definition,) = APPLICATION_COMMANDS
    assert definition["name"] == "c2a"
    for sub in definition["options"]:
        values = {o["name"]: "30m" if o["name"] == "duration" else "x" for o in sub["options"]}
        assert not hasattr(parse(command_text(chosen(sub["name"], **values))), "problem"), sub


@pytest.mark.parametrize(
    ("link", "found"),
    [
        ("https://discord.com/channels/800000000000000001/810/820", ("810", "820")),
        ("https://discord.com/channels/@me/810/820", ("810", "820")),
        ("https://discord.com/channels/800000000000000001/810", None),
        ("https://t.slack.com/archives/C0GEN/p1767225600000100", None),
    ],
)
def test_a_discord_message_link_names_its_channel_and_message(link: str, found: object) -> None:
    assert message_link(link) == found


def test_register_commands_overwrites_the_application_s_commands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> list[str]:
        async with FakeDiscordWithCommands() as fake:
            fake.patch(monkeypatch)
            fake.add_bot(TOKEN, "900000000000000002", "worker-1", APPLICATION)
            names = await register_commands(APPLICATION, TOKEN)
            (put,) = [c for c in fake.calls if c.method == "PUT"]
            assert put.path == f"/applications/{APPLICATION}/commands"
            assert put.json == APPLICATION_COMMANDS and put.status == 200
            assert [c["name"] for c in fake.commands[APPLICATION]] == ["c2a"]
            return names

    assert asyncio.run(scenario()) == ["c2a"]


def test_c2a_discord_invite_registers_c2a_when_the_token_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def scenario() -> int:
        async with FakeDiscordWithCommands() as fake:
            fake.patch(monkeypatch)  # restores discord.py's endpoints after the test
            fake.add_bot(TOKEN, "900000000000000002", "worker-1", APPLICATION)
            manifest = manifest_with_application(tmp_path)
            data = yaml.safe_load(manifest.read_text(encoding="utf-8"))
            data["discord"]["api_url"] = f"{fake.url}/api/v10"
            manifest.write_text(yaml.safe_dump(data), encoding="utf-8")
            monkeypatch.setenv("DISCORD_W1_TOKEN", TOKEN)
            argv = ["discord", "invite", "--agent", "worker-1", "--manifest", str(manifest)]
            status = await asyncio.to_thread(run, argv)
            assert [c["name"] for c in fake.commands[APPLICATION]] == ["c2a"]
            return status

    assert asyncio.run(scenario()) == 0
    err = capsys.readouterr().err
    assert f"registered /c2a for worker-1's application {APPLICATION}" in err
