"""A platform added from outside: a package registered by entry point (`c2a.adapters`) receives
events and sends actions through the same composition `c2a run` uses for a workspace, with no
edit to core, harness_bridge or c2a."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from c2a.platforms import BUILTIN, installed
from c2a.run import WorkspaceRun, run_workspaces
from core.actions import React
from core.clock import VirtualClock
from core.engine import Engine
from core.errors import ManifestError
from core.intent import Intent
from core.manifest import Workspace, parse_manifest
from core.markup import PLAIN_TEXT
from core.platform import PLATFORM_GROUP
from core.signals import Signal
from core.sqlite_store import SQLiteStore

HERE = Path(__file__).parent
TOY_MANIFEST: dict[str, Any] = {
    "version": 1,
    "workspace": "toy",
    "toy": {"server": "play.example"},
    "agents": {"lead": {"lead": True, "roles": ["ops"], "toy": {"user_id": "toy-lead"}}},
    "roles": {"ops": {"toy_groups": ["g-ops"]}},
}


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
    manifest.write_text(yaml.safe_dump(TOY_MANIFEST))

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
                    "mentions": ["toy-lead"],
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
            assert isinstance(action, React)
            # The lead has no harness, so nothing will answer: its mark says blocked, not seen.
            assert (action.platform, action.emoji, action.signal) == ("toy", "🚧", Signal.BLOCKED)
        finally:
            stop.set()
            await task

    asyncio.run(scenario())


def test_the_toy_manifest_section_is_read_indexed_and_described(toy_installed: Path) -> None:
    platforms = installed()
    workspace = Workspace.from_manifest(
        parse_manifest(TOY_MANIFEST, platforms=platforms), platforms
    )
    assert workspace.agent_for("toy", "toy-lead") == "lead"
    assert workspace.user_id("toy", "lead") == "toy-lead"
    assert workspace.roles_named("toy", ["g-ops"]) == ("ops",)
    lines = workspace.describe()
    assert "toy server play.example" in lines
    lead = "agent lead (lead: escalations go here): toy toy-lead; roles ops; no harness"
    assert f"{lead}: nothing answers it" in lines
    assert "role ops: toy group g-ops -> lead" in lines


def test_the_toy_brings_no_markup_so_its_text_is_read_as_plain_text(toy_installed: Path) -> None:
    platforms = installed()
    workspace = Workspace.from_manifest(
        parse_manifest(TOY_MANIFEST, platforms=platforms), platforms
    )
    assert workspace.markup["toy"] is PLAIN_TEXT
    rules = Engine(workspace, SQLiteStore(":memory:"), VirtualClock()).classifier
    # `<@U1>` is a mention where the built-in platforms write it, text on the toy.
    assert rules.classify("thanks <@U1>", "slack") == {Intent.THANKS}
    assert rules.classify("thanks <@U1>", "toy") == frozenset()
    assert rules.classify("thanks @lead", "toy") == {Intent.THANKS}


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"toy": {"server": "x", "port": 1}}, "m.yaml: toy.port: unknown key"),
        (
            {"agents": {"a": {"toy": {"user_id": "U1"}}}},
            "m.yaml: agents.a.toy.user_id: String should match pattern '^toy-[a-z]+$'",
        ),
        ({"roles": {"r": {"toy_grups": []}}}, "m.yaml: roles.r.toy_grups: unknown key"),
    ],
)
def test_the_toy_section_is_validated_with_its_key_path(
    toy_installed: Path, change: dict[str, Any], error: str
) -> None:
    data = {"version": 1, "workspace": "w", "agents": {"a": {}}, **change}
    with pytest.raises(ManifestError) as caught:
        parse_manifest(data, "m.yaml", platforms=installed())
    assert str(caught.value) == error


def test_without_the_package_its_section_is_an_unknown_key() -> None:
    with pytest.raises(ManifestError, match=r"m.yaml: toy: unknown key"):
        parse_manifest(TOY_MANIFEST, "m.yaml", platforms=installed())
