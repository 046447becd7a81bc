"""A platform added from outside: a package registered by entry point (`c2a.adapters`) receives
events and sends actions through the same composition `c2a run` uses for a workspace, with no
edit to core, harness_bridge or c2a."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
import yaml

from c2a.platforms import BUILTIN, installed
from c2a.run import WorkspaceRun, run_workspaces
from core.platform import PLATFORM_GROUP

HERE = Path(__file__).parent


@pytest.fixture
def toy_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The toy package and its distribution metadata in a directory put on `sys.path`, as
    `pip install` would leave them."""
    site = tmp_path / "site"
    (site / "toychat").mkdir(parents=True)
    shutil.copy(HERE / "toychat.py", site / "toychat" / "__init__.py")
    info = site / "toychat-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toychat\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{PLATFORM_GROUP}]\ntoy = toychat:PLATFORM\n")
    monkeypatch.syspath_prepend(str(site))
    return site


def test_without_the_package_only_the_built_in_platforms_are_installed() -> None:
    assert set(installed()) == set(BUILTIN)


def test_the_entry_point_adds_the_platform(toy_installed: Path) -> None:
    platforms = installed()
    assert set(platforms) == {*BUILTIN, "toy"}
    assert platforms["toy"].normalise({"type": "typing"}) is None


def test_a_toy_message_reaches_the_ledger_and_the_agent_and_its_reply_reaches_the_toy_sender(
    toy_installed: Path, tmp_path: Path
) -> None:
    manifest = tmp_path / "toy.yaml"
    manifest.write_text(
        yaml.safe_dump({"version": 1, "workspace": "toy", "agents": {"lead": {"lead": True}}})
    )

    async def scenario() -> None:
        stop = asyncio.Event()
        runs: list[WorkspaceRun] = []
        task = asyncio.create_task(
            run_workspaces(
                [manifest], stop=stop, environ={}, data_dir=tmp_path / "data", started=runs.extend
            )
        )
        try:
            async with asyncio.timeout(10):
                while not runs and not task.done():
                    await asyncio.sleep(0.01)
            [run] = runs
            toy = run.connections["toy"]
            assert toy.started
            await toy.say(
                {
                    "type": "message",
                    "id": "1",
                    "channel": "c1",
                    "user": "ana",
                    "text": "lead, can you look at the build?",
                    "mentions": ["lead"],
                }
            )
            [delivery] = await run.store.deliveries("toy:c1:1")
            assert (delivery.decision.agent, delivery.decision.policy) == ("lead", "must_respond")
            pending = await run.store.pending("lead")
            assert [d.decision.event_id for d in pending] == ["toy:c1:1"]
            async with asyncio.timeout(10):
                while not toy.sender.actions:
                    await asyncio.sleep(0.01)
            [action] = toy.sender.actions
            assert (action["platform"], action["action"], action["emoji"]) == ("toy", "react", "👀")
        finally:
            stop.set()
            await task

    asyncio.run(scenario())
