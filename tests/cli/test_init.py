"""`c2a init` writes a valid, commented manifest, filled in from whatever tokens are set."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from fakes.discord import FakeDiscord
from fakes.slack import FakeSlack

from c2a.cli import main
from c2a.init_cli import discover, render_manifest
from c2a.platforms import installed
from c2a.run import WorkspaceRun, run_workspaces
from core.errors import ManifestError
from core.manifest import load_manifest


def test_without_tokens_init_writes_a_manifest_that_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("SLACK_LEAD_BOT_TOKEN", "DISCORD_LEAD_TOKEN", "SLACK_WORKER_1_BOT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "workspace.yaml"
    assert main(["init", "--out", str(out), "--workspace", "acme"]) == 0
    text = out.read_text()
    assert "# slack: {user_id: U..., bot_token_env: SLACK_LEAD_BOT_TOKEN" in text
    assert "bot_token_env: SLACK_WORKER_1_BOT_TOKEN" in text
    assert text.count("escalations go here") == 1 and "# webchat: {}" in text
    assert text.count("# approvers: [U...]") == 2
    manifest = load_manifest(out, platforms=installed())
    assert list(manifest.agents) == ["lead", "worker-1"] and manifest.agents["lead"].lead
    said = capsys.readouterr().out
    assert "0 filled in" in said and f"next: c2a check {out}, then c2a run {out}" in said
    assert main(["init", "--out", str(out)]) == 2  # never overwrites without --force


def test_tokens_fill_in_what_the_platforms_know(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def run() -> dict[str, dict[str, str]]:
        async with FakeSlack() as slack, FakeDiscord(guild_id="800000000000000401") as fake:
            slack.add_bot("xoxb-lead", "U0LEAD", "B0LEAD", "T0ACME")
            fake.patch(monkeypatch)
            fake.add_bot("discord-token", "900000000000000001", "lead", "910000000000000001")
            env = {"SLACK_LEAD_BOT_TOKEN": "xoxb-lead", "DISCORD_LEAD_TOKEN": "discord-token"}
            async with asyncio.timeout(10):
                return await discover(["lead", "worker-1"], env, slack_api_url=slack.api_url)

    facts = asyncio.run(run())
    assert facts["lead"] == {
        "slack_user_id": "U0LEAD",
        "slack_bot_id": "B0LEAD",
        "slack_team_id": "T0ACME",
        "discord_user_id": "900000000000000001",
        "discord_application_id": "910000000000000001",
    }
    assert facts["worker-1"] == {}
    out = tmp_path / "m.yaml"
    out.write_text(render_manifest("acme", ["lead", "worker-1"], facts))
    manifest = load_manifest(out, platforms=installed())
    assert manifest.slack is not None and manifest.slack.team_id == "T0ACME"
    lead = manifest.agents["lead"]
    assert lead.slack is not None and lead.slack.user_id == "U0LEAD"
    assert lead.discord is not None and lead.discord.application_id == "910000000000000001"


def test_a_refused_token_is_one_line_naming_its_variable() -> None:
    async def run() -> None:
        async with FakeSlack() as slack, asyncio.timeout(10):
            await discover(
                ["lead"], {"SLACK_LEAD_BOT_TOKEN": "xoxb-nope"}, slack_api_url=slack.api_url
            )

    with pytest.raises(ManifestError, match="SLACK_LEAD_BOT_TOKEN: Slack refused the token"):
        asyncio.run(run())


def test_a_manifest_with_no_platform_checks_but_says_so_and_a_run_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "workspace.yaml"
    assert main(["init", "--out", str(out)]) == 0
    assert main(["check", str(out)]) == 0
    said = capsys.readouterr().out
    lead = "agent lead (lead: escalations go here): no platform ids; no harness: nothing answers it"
    assert lead in said

    async def run() -> None:
        stop = asyncio.Event()

        def started(runs: list[WorkspaceRun]) -> None:
            stop.set()  # once every workspace has started

        async with asyncio.timeout(20):
            await run_workspaces(
                [out], stop=stop, environ={}, data_dir=tmp_path / "data", started=started
            )

    with caplog.at_level(logging.WARNING):
        asyncio.run(run())
    assert "team: no platform is configured, so no message will arrive" in caplog.text
    assert "team: no harness for lead, worker-1, so nothing answers" in caplog.text
