"""The stdio backend runs external harnesses as real subprocesses: the example from docs/, and
one that breaks the protocol on purpose (`hostile_harness.py`)."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from world import DM, scenario

from core.engine import Engine
from core.engine_port import EnginePort
from core.errors import ManifestError
from core.sqlite_store import SQLiteStore
from harness_bridge.backends import stdio
from harness_bridge.backends.registry import HarnessContext
from harness_bridge.backends.stdio import StdioHarness
from harness_bridge.rpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR
from harness_bridge.tools import ChatTools

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "stdio_harness.py"


def sends(store: SQLiteStore) -> list[tuple[str, str]]:
    rows = store.db.execute(
        "SELECT agent, json_extract(action, '$.inReplyTo') FROM outbox "
        "WHERE json_extract(action, '$.action') = 'send'"
    )
    return [(str(a), str(b)) for a, b in rows]


def test_the_example_harness_answers_a_dm_once_through_the_tools() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        harness = StdioHarness(
            EnginePort(engine, "lead"), engine.deliveries, [sys.executable, str(EXAMPLE)]
        )
        deliverer = await harness.start()
        try:
            assert await deliverer.resume() >= 2  # the DM and the thanks, acknowledged
            async with asyncio.timeout(10):
                while not sends(store):
                    await asyncio.sleep(0.02)
            assert sends(store) == [("lead", DM)]
            assert await store.pending("lead") == []
        finally:
            await harness.stop()
        # A new process gets nothing again: everything was acknowledged.
        harness = StdioHarness(
            EnginePort(engine, "lead"), engine.deliveries, [sys.executable, str(EXAMPLE)]
        )
        deliverer = await harness.start()
        try:
            assert await deliverer.resume() == 0
        finally:
            await harness.stop()
        assert sends(store) == [("lead", DM)]

    scenario(test)


def test_the_harness_process_gets_what_is_passed_and_none_of_the_host_s_secrets(
    tmp_path: Path,
) -> None:
    """c2a's environment holds the platforms' tokens: the harness process (here the example
    harness, after writing down the names it was given) gets the base variables, the
    `pass_env` ones and `env`, and nothing else."""
    names = tmp_path / "environ.json"
    dump = f"import json, os; open({str(names)!r}, 'w').write(json.dumps(sorted(os.environ)))"
    script = f"{dump}; import runpy; runpy.run_path({str(EXAMPLE)!r}, run_name='__main__')"
    environ = {"PATH": "/usr/bin", "SLACK_LEAD_TOKEN": "xoxb-1-2", "MODEL_KEY": "k-123"}
    settings = {
        "backend": "stdio",
        "command": [sys.executable, "-c", script],
        "pass_env": ["MODEL_KEY"],
        "env": {"MODE": "test"},
    }

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        context = HarnessContext(EnginePort(engine, "lead"), engine.deliveries, environ=environ)
        harness = stdio.from_settings(context, settings)
        await harness.start()
        await harness.stop()
        with pytest.raises(ManifestError, match=r"pass_env: MODEL_KEY is not set"):
            stdio.from_settings(replace(context, environ={}), settings)

    scenario(test)
    assert set(json.loads(names.read_text())) >= {"PATH", "MODEL_KEY", "MODE"}
    assert "SLACK_LEAD_TOKEN" not in json.loads(names.read_text())


def test_a_harness_that_cannot_start_marks_the_agent_unavailable() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        harness = StdioHarness(
            EnginePort(engine, "lead"),
            engine.deliveries,
            ["/nonexistent/harness"],
            restart_after=60,
        )
        task = asyncio.create_task(harness.run())
        async with asyncio.timeout(5):
            while "lead" not in engine.unavailable:
                await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    scenario(test)


HOSTILE = Path(__file__).with_name("hostile_harness.py")


def hostile(engine: Engine, mode: str, *argv: str) -> StdioHarness:
    return StdioHarness(
        EnginePort(engine, "lead"), engine.deliveries, [sys.executable, str(HOSTILE), mode, *argv]
    )


async def until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.02)


def test_an_error_answer_with_a_string_code_fails_that_delivery_and_the_link_goes_on() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        harness = hostile(engine, "bad-error-code")
        deliverer = await harness.start()
        try:
            assert await deliverer.resume() >= 2
            await until(lambda: bool(sends(store)))
            assert sends(store) == [("lead", DM)]
            assert await store.pending("lead") == []
            ((reason,),) = store.db.execute(
                "SELECT disposition_reason FROM deliveries "
                "WHERE agent = 'lead' AND status = 'failed'"
            ).fetchall()
            assert "error.code must be an integer" in reason
        finally:
            await harness.stop()

    scenario(test)


def test_a_240_kb_tool_call_of_non_ascii_text_is_served() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        harness = hostile(engine, "long-text")
        deliverer = await harness.start()
        try:
            await deliverer.resume()
            await until(lambda: bool(sends(store)))
            (text,) = store.db.execute(
                "SELECT json_extract(action, '$.text') FROM outbox "
                "WHERE json_extract(action, '$.action') = 'send'"
            ).fetchone()
            assert text == "жё" * 20_000
        finally:
            await harness.stop()

    scenario(test)


NULL_PARSE, NULL_INVALID = (None, PARSE_ERROR), (None, INVALID_REQUEST)


def test_garbage_lines_get_json_rpc_errors_and_the_link_stays_up(tmp_path: Path) -> None:
    record = tmp_path / "answers.jsonl"
    record.touch()

    def answers() -> list[dict[str, Any]]:
        # The harness may be writing a line as it is read: only whole lines count.
        whole = record.read_text().rpartition("\n")[0]
        return [json.loads(line) for line in whole.splitlines()]

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        harness = hostile(engine, "garbage", str(record))
        deliverer = await harness.start()
        try:
            await until(lambda: any(a.get("id") == "after" for a in answers()))
            assert await deliverer.resume() >= 2  # the link is still up
            assert harness.connection is not None
            reasons = [line.reason for line in harness.connection.bad_lines]
        finally:
            await harness.stop()
        got = Counter((a["id"], a["error"]["code"]) for a in answers() if "error" in a)
        assert got == Counter(
            [NULL_PARSE] * 5
            + [NULL_INVALID] * 7
            + [("g1", INVALID_REQUEST), ("g2", INVALID_REQUEST), ("g5", INVALID_REQUEST)]
            + [("g3", METHOD_NOT_FOUND), ("g4", INVALID_PARAMS)]
        )
        assert "tools" in next(a for a in answers() if a["id"] == "after")["result"]
        assert any("batch" in reason for reason in reasons)
        assert any("longer than" in reason for reason in reasons)
        assert any("error.code must be an integer" in reason for reason in reasons)

    scenario(test)


def test_a_harness_stderr_becomes_log_records_and_a_flood_does_not_block_it(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        harness = hostile(engine, "stderr-flood")
        deliverer = await harness.start()  # times out if nobody reads the flood
        try:
            assert await deliverer.resume() >= 2
        finally:
            await harness.stop()
        assert not [t for t in asyncio.all_tasks() if t.get_name() == "stderr-lead"]

    with caplog.at_level(logging.INFO, logger="c2a.harness"):
        scenario(test)
    lines = [r.getMessage() for r in caplog.records if r.name == "c2a.harness.lead"]
    assert lines[0] == "harness lead: flood line 0 " + "y" * 1000
    assert "harness lead: escape \\x1b[2J and \\r carriage" in lines
    (cut,) = [line for line in lines if line.startswith("harness lead: zzz")]
    assert cut.endswith("… (line cut)") and len(cut) < 10_000
    assert lines[-1] == "harness lead: flood done"
    assert len(lines) == 1003
    assert "flood line" not in capfd.readouterr().err
