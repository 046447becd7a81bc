"""The parts of a reload, in process: the gate that holds receives back while the engine
changes, the engine taking a new workspace, which platforms a change reconnects, and a reload
refused whole (one line, the running manifest kept)."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from builders import LOCAL, local_workspace
from webchat_run import webchat_run

from adapters.webchat.access import TOKEN_ENV
from adapters.webchat.server import WebChat
from c2a.platforms import installed
from c2a.reload import Gate, changed_platforms, reconfigure, reload_workspace
from c2a.run import WorkspaceRun, load_workspaces
from core.actions import Choice
from core.clock import SystemClock
from core.engine import Engine
from core.manifest import Workspace
from core.redact import Redactor
from core.sqlite_store import SQLiteStore


def test_a_receive_waits_while_the_gate_is_closed_and_a_reload_waits_for_receives() -> None:
    async def scenario() -> list[str]:
        gate, order = Gate(), []

        async def receive(name: str, hold: float) -> None:
            async with gate.passing():
                order.append(f"{name} in")
                await asyncio.sleep(hold)
                order.append(f"{name} out")

        async def reload() -> None:
            async with gate.closed():
                order.append("reload in")
                await asyncio.sleep(0.05)
                order.append("reload out")

        first = asyncio.create_task(receive("first", 0.05))
        await asyncio.sleep(0.01)
        swap = asyncio.create_task(reload())
        await asyncio.sleep(0.01)
        late = asyncio.create_task(receive("late", 0))
        await asyncio.gather(first, swap, late)
        return order

    assert asyncio.run(scenario()) == [
        "first in",
        "first out",
        "reload in",
        "reload out",
        "late in",
        "late out",
    ]


def _workspaces_in(value: object) -> list[Workspace]:
    """The workspaces an object holds, directly or one attribute down."""
    found = []
    for attribute in _attributes(value):
        if isinstance(attribute, Workspace):
            found.append(attribute)
        found += [a for a in _attributes(attribute) if isinstance(a, Workspace)]
    return found


def _attributes(value: object) -> list[object]:
    names = list(getattr(value, "__dict__", {})) + list(getattr(type(value), "__slots__", ()))
    return [getattr(value, name) for name in names if hasattr(value, name)]


def test_the_engine_takes_the_new_workspace_everywhere_and_keeps_what_others_hold(
    tmp_path: Path,
) -> None:
    old = local_workspace()
    new = local_workspace(channels={"C0GEN": {}, "C0NEW": {}})

    async def scenario() -> None:
        store = SQLiteStore(str(tmp_path / "ledger.sqlite3"))
        await store.open()
        engine = Engine(old, store, SystemClock())
        engine.note_members("C0GEN", {"lead", "ghost"})
        held = (engine.deliveries, engine.followup, engine.unavailable, engine.blocked)
        assert old in _workspaces_in(engine)
        await reconfigure(engine, new, Redactor())
        assert _workspaces_in(engine) and all(w is new for w in _workspaces_in(engine))
        kept = (engine.deliveries, engine.followup, engine.unavailable, engine.blocked)
        assert all(now is before for now, before in zip(kept, held, strict=True))
        assert engine.deliveries.framer is engine.framer
        assert engine.decider.unavailable is engine.unavailable  # who is down, seen by selection
        assert engine.state.members["C0GEN"] == {"lead"}  # only agents of the workspace
        await store.close()

    asyncio.run(scenario())


def test_a_question_open_at_a_reload_stays_open_and_the_new_approvers_decide(
    tmp_path: Path,
) -> None:
    """The platforms' button listeners hold the engine's approvals: a reload keeps that object
    (a question asked before it can still be answered) and gives it the new approvers."""
    old = local_workspace()
    agents = yaml.safe_load(LOCAL.read_text())["agents"]
    agents["lead"] = {**agents["lead"], "approvers": ["ana"]}
    new = local_workspace(agents=agents)

    async def scenario() -> None:
        store = SQLiteStore(str(tmp_path / "ledger.sqlite3"))
        await store.open()
        engine = Engine(old, store, SystemClock())
        approvals = engine.approvals
        choices = (Choice(id="allow", label="Allow", allow=True),)
        approvals.open("req-1", "lead", choices, timedelta(minutes=5))
        await reconfigure(engine, new, Redactor())
        assert engine.approvals is approvals
        assert approvals.agent_of("req-1") == "lead"
        assert approvals.approvers == {"lead": ("ana",)}
        await store.close()

    asyncio.run(scenario())


def _manifest(**changes: Any) -> Any:
    data = yaml.safe_load(LOCAL.read_text())
    data.update(changes)
    return data


def test_only_what_a_platform_reads_of_the_manifest_reconnects_it() -> None:
    platforms = installed()
    before = local_workspace().manifest
    attention = local_workspace(attention={"deadline_ms": 60_000}).manifest
    assert changed_platforms(before, attention, platforms) == []
    channels = local_workspace(channels={"C0NEW": {}}).manifest
    assert set(changed_platforms(before, channels, platforms)) == set(platforms)
    agents = _manifest()["agents"]
    agents["worker-1"]["slack"]["app_token_env"] = "ANOTHER_VARIABLE"
    token = local_workspace(agents=agents).manifest
    assert changed_platforms(before, token, installed()) == ["slack"]
    fewer = {a: c for a, c in _manifest()["agents"].items() if a != "worker-2"}
    removed = local_workspace(agents=fewer).manifest
    assert set(changed_platforms(before, removed, installed())) == {"slack", "discord", "webchat"}


@pytest.mark.parametrize(
    ("change", "reason"),
    [({"workspace": "renamed"}, "needs a restart"), ({"channelz": {}}, "channelz")],
)
def test_a_refused_reload_keeps_the_running_manifest_and_says_why_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, change: dict[str, Any], reason: str
) -> None:
    path = tmp_path / "team.yaml"
    data = {k: v for k, v in _manifest().items() if k not in ("slack", "discord", "webchat")}
    data["agents"] = {a: {"roles": c.get("roles", [])} for a, c in data["agents"].items()}
    data["agents"]["lead"]["lead"] = True
    path.write_text(yaml.safe_dump(data))
    [workspace] = load_workspaces([path])
    run = WorkspaceRun(workspace, tmp_path, {})
    run.prepare()
    path.write_text(yaml.safe_dump({**data, **change}))

    with caplog.at_level(logging.INFO, logger="c2a.run"):
        assert asyncio.run(reload_workspace(run, path)) is False
    assert run.workspace is workspace
    [line] = [r for r in caplog.records if "reload refused" in r.getMessage()]
    assert line.levelno == logging.ERROR
    assert reason in line.getMessage() and "\n" not in line.getMessage()


def test_a_reload_that_removes_an_agent_reconnects_the_web_chat_which_takes_posts_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "local.yaml"
    data = {k: v for k, v in _manifest().items() if k not in ("slack", "discord")}
    for config in data["agents"].values():
        del config["slack"], config["discord"]
    path.write_text(yaml.safe_dump(data))
    environ = {TOKEN_ENV: "a-fixed-token-for-the-reload-test-0123456789"}

    async def scenario() -> tuple[WebChat, WebChat, list[str]]:
        reload = asyncio.Event()
        async with asyncio.timeout(20), webchat_run(path, tmp_path, environ, reload) as started:
            run, old, _ = started
            del data["agents"]["worker-2"]
            path.write_text(yaml.safe_dump(data))
            reload.set()
            while "reloaded" not in caplog.text:
                await asyncio.sleep(0.02)
            new: WebChat = run.connections["webchat"].chat  # type: ignore[attr-defined]
            async with (
                aiohttp.ClientSession() as http,
                http.ws_connect(new.link("/ws"), origin=new.origin) as socket,
            ):
                post = {"op": "post", "as": "ana", "channel": "general", "text": "still here?"}
                await socket.send_json(post)
                while not new.history.messages:
                    await asyncio.sleep(0.02)
        return old, new, list(run.workspace.agent_ids)

    with caplog.at_level(logging.INFO, logger="c2a.run"):
        old, new, agents = asyncio.run(scenario())
    assert agents == ["lead", "worker-1"]
    assert new is not old
    assert "platforms reconnected: webchat" in caplog.text
    assert [m.text for m in new.history] == ["still here?"]
