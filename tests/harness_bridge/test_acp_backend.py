"""The `acp` backend against a fake ACP agent run as a real subprocess."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from world import DM, scenario

from core.engine import Engine
from core.errors import ManifestError
from core.sqlite_store import SQLiteStore
from harness_bridge.backends.acp import AcpModelLoop, from_settings, mcp_server_entry
from harness_bridge.prompt import RESPONSE_RULES
from harness_bridge.tools import ChatTools
from harness_bridge.turns import Turn

FAKE = str(Path(__file__).with_name("fake_acp_agent.py"))


async def turn_of(engine: Engine, event_id: str) -> Turn:
    (delivery,) = [d for d in await engine.store.deliveries(event_id) if d.decision.agent == "lead"]
    message = await engine.redeliver(delivery, 1, compact=False)
    return Turn(engine.clock.now(), "immediate", (dict(message["params"]),))


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_first_prompt_carries_rules_and_event_and_unlisted_tools_are_denied(
    tmp_path: Path,
) -> None:
    log = tmp_path / "agent.jsonl"

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        entry = mcp_server_entry("lead", "workspace.yaml", "ledger.db")
        env = {"FAKE_ACP_RECORD": str(log), "FAKE_ACP_ASK": "shell_exec,chat_send_message"}
        turn = await turn_of(engine, DM)
        async with AcpModelLoop(
            [sys.executable, FAKE], entry, allow=["chat_send_message"], env=env
        ) as loop:
            assert loop.inject(dict(turn.events[0])) is False
            async with asyncio.timeout(20):
                first = await loop.run(turn)
                second = await loop.run(turn)
        assert first.status == second.status == "completed"
        assert first.event_ids == (DM,) and first.text == "ok"

    scenario(test)
    seen = records(log)
    (session,) = [r for r in seen if r["kind"] == "new_session"]
    (server,) = session["mcp_servers"]
    assert server["name"] == "c2a" and server["command"] == sys.executable
    assert server["args"][:3] == ["-m", "harness_bridge.mcp_server", "--manifest"]
    assert server["args"][-2:] == ["--agent", "lead"] and "--store" in server["args"]
    first, second = [r["text"] for r in seen if r["kind"] == "prompt"]
    assert first.startswith(RESPONSE_RULES) and DM in first and "must_respond" in first
    assert RESPONSE_RULES not in second and DM in second
    outcomes = {r["tool"]: r["outcome"] for r in seen if r["kind"] == "permission"}
    assert outcomes["shell_exec"] == {"outcome": "selected", "optionId": "no"}
    assert outcomes["chat_send_message"] == {"outcome": "selected", "optionId": "yes"}


def test_cancelling_a_turn_sends_session_cancel(tmp_path: Path) -> None:
    log = tmp_path / "agent.jsonl"

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        entry = mcp_server_entry("lead", "workspace.yaml", "ledger.db")
        env = {"FAKE_ACP_RECORD": str(log), "FAKE_ACP_HANG": "1"}
        turn = await turn_of(engine, DM)
        async with AcpModelLoop([sys.executable, FAKE], entry, env=env) as loop:
            task = asyncio.create_task(loop.run(turn))
            async with asyncio.timeout(20):
                while not log.exists() or "prompt" not in log.read_text(encoding="utf-8"):
                    await asyncio.sleep(0.02)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                while "cancel" not in [r["kind"] for r in records(log)]:
                    await asyncio.sleep(0.02)

    scenario(test)
    (cancel,) = [r for r in records(log) if r["kind"] == "cancel"]
    assert cancel["session_id"] == "s1"


def test_settings_are_validated() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        good = {"backend": "acp", "command": ["agent"], "manifest": "m", "store": "s"}
        harness = from_settings("lead", engine, {**good, "allow": ["chat_react"]})
        assert harness.loop.policy.allow == {"chat_react"}
        await harness.loop.aclose()
        with pytest.raises(ManifestError, match=r"agents\.lead\.harness\.allow"):
            from_settings("lead", engine, {**good, "allow": ["*"]})
        with pytest.raises(ManifestError, match=r"agents\.lead\.harness\.command"):
            from_settings("lead", engine, {**good, "command": []})

    scenario(test)
