"""`/c2a` through `c2a run` on Discord: the real discord.py against the fake Discord, the run's
SQLite ledger on disk. A person mentions the lead's bot, then runs `/c2a status` and `/c2a why
<link to that message>`; each reaches the bot as an application command interaction and is
answered from the run's ledger, ephemerally, in Discord's markdown."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import yaml
from builders import D_HUMAN, D_LEAD, GUILD
from fakes import openai_server as fake_openai
from fakes.discord_commands import FakeDiscordWithCommands
from test_run_discord import (
    CHANNEL,
    ENV,
    TOKEN,
    _quick_guild_ready,  # noqa: F401  (autouse: a quick guild ready)
    wait_for,
    write_manifest,
)

from c2a.run import WorkspaceRun, run_workspaces

APPLICATION = "910000000000000001"


def test_status_and_why_answer_ephemerally_through_c2a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> tuple[str, str]:
        async with asyncio.timeout(30), FakeDiscordWithCommands(guild_id=GUILD) as fake:
            fake._clock_ms = int(time.time() * 1000)  # the run decides on the system clock
            fake.patch(monkeypatch)
            fake.add_bot(TOKEN, D_LEAD, "lead", APPLICATION)
            fake.add_member(D_HUMAN, "ada.l")
            fake.add_channel(CHANNEL, "general")
            async with fake_openai.FakeOpenAI([]) as model:
                manifest = write_manifest(tmp_path, fake, model.base_url)
                data = yaml.safe_load(manifest.read_text())
                data["agents"]["lead"]["harness"]["quiet_ms"] = 600_000  # no turn in the test
                manifest.write_text(yaml.safe_dump(data))
                stop, runs = asyncio.Event(), list[WorkspaceRun]()
                started = run_workspaces(
                    [manifest], stop=stop, environ=ENV, data_dir=tmp_path, started=runs.extend
                )
                task = asyncio.create_task(started)
                try:
                    await wait_for(lambda: runs or task.done(), "the workspace to start", 20)
                    assert not task.done(), task.exception()
                    engine = runs[0].host.engine
                    said = await fake.user_says(CHANNEL, D_HUMAN, f"<@{D_LEAD}> deploy done?")
                    await wait_for(lambda: engine.state.messages, "the mention to be taken in")
                    link = f"https://discord.com/channels/{GUILD}/{CHANNEL}/{said['id']}"
                    status = await answer(fake, "status")
                    why = await answer(fake, "why", link=link)
                finally:
                    stop.set()
                    await asyncio.wait_for(task, 20)
        return status, why

    status, why = asyncio.run(scenario())
    first, working = status.splitlines()
    assert first.startswith("**lead**: 1 open, ")  # queued or already handed to its harness
    assert working == f"  • in {CHANNEL}: <@{D_LEAD}> deploy done?"
    message, lead = why.splitlines()
    assert message == f"Message: <@{D_LEAD}> deploy done?"
    # pending, or delivered when its harness has it already
    assert lead.startswith("  **lead**: must_respond (`direct_mention`), buffered, ")


async def answer(fake: FakeDiscordWithCommands, name: str, **options: str) -> str:
    """A person runs `/c2a <name>`: the answer only they see."""
    interactions = fake.interactions
    sent = await interactions.subcommand(CHANNEL, D_HUMAN, APPLICATION, name, **options)
    await wait_for(lambda: interactions.answer_to(sent) is not None, f"the answer to {name}")
    answered = interactions.answer_to(sent)
    assert answered is not None
    text, ephemeral = answered
    assert ephemeral, text
    return text
