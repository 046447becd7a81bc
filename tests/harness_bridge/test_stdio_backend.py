"""The stdio backend runs the example external harness from docs/ as a real subprocess."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from world import DM, scenario

from core.engine import Engine
from core.sqlite_store import SQLiteStore
from harness_bridge.backends.stdio import StdioHarness
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
        harness = StdioHarness("lead", engine, [sys.executable, str(EXAMPLE)])
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
        harness = StdioHarness("lead", engine, [sys.executable, str(EXAMPLE)])
        deliverer = await harness.start()
        try:
            assert await deliverer.resume() == 0
        finally:
            await harness.stop()
        assert sends(store) == [("lead", DM)]

    scenario(test)


def test_a_harness_that_cannot_start_marks_the_agent_unavailable() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        harness = StdioHarness("lead", engine, ["/nonexistent/harness"], restart_after=60)
        task = asyncio.create_task(harness.run())
        async with asyncio.timeout(5):
            while "lead" not in engine.unavailable:
                await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    scenario(test)
