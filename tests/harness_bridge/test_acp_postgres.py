"""The `acp` backend on a PostgreSQL ledger, against a real PostgreSQL server and the fake ACP
agent as a real subprocess: there is no SQLite file for a stdio tools process to open, so an
agent that takes HTTP MCP servers is given the host's own endpoint and answers through it, and
one that takes only stdio is down, with a line that says why and what to do."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from builders import LEAD, LOCAL, W1, W2, local_workspace, slack_body, slack_join
from test_acp_backend import DM, FAKE, TIMEOUT_S, dm, serving, until

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.engine import Engine
from core.engine_port import EnginePort
from core.postgres_store import PostgresStore
from harness_bridge.backends.acp import AcpHarness, from_settings
from harness_bridge.backends.registry import HarnessContext

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "store"))
from postgres_cluster import Cluster, throwaway

SCHEMA = "team"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from throwaway()


async def ingest(engine: Engine, store: PostgresStore, body: dict[str, Any]) -> None:
    event = normalise(body)
    assert event is not None
    async with store.transaction():
        await engine.ingest(event)


def scenario(
    cluster: Cluster, tmp_path: Path, env: dict[str, str], test: Callable[..., Awaitable[None]]
) -> None:
    """The lead's acp harness built as `c2a run` builds it on PostgreSQL (its `ledger` is ""),
    a DM to the lead pending, and `test(harness, engine, url)` run while it serves."""
    url = cluster.database()

    async def run() -> None:
        store = PostgresStore(url, schema=SCHEMA)
        await store.open()
        engine = Engine(local_workspace(), store, VirtualClock(parse_time("2026-01-01T00:00:10Z")))
        for body in [*(slack_body(slack_join(u)) for u in (LEAD, W1, W2)), dm()]:
            await ingest(engine, store, body)
        context = HarnessContext(
            EnginePort(engine, "lead"),
            engine.deliveries,
            manifest=str(LOCAL),
            ledger="",
            files=str(tmp_path / SCHEMA),
        )
        settings = {
            "backend": "acp",
            "command": [sys.executable, FAKE],
            "env": {"FAKE_ACP_RECORD": str(tmp_path / "agent.jsonl"), **env},
            "quiet_ms": 0,
        }
        try:
            async with asyncio.timeout(TIMEOUT_S), serving(from_settings(context, settings)) as h:
                await test(h, engine, url)
        finally:
            await store.close()

    asyncio.run(run())


def records(tmp_path: Path, kind: str) -> list[dict[str, Any]]:
    path = tmp_path / "agent.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if r["kind"] == kind]


def sends(url: str) -> list[str]:
    with psycopg.connect(url) as db:
        rows = db.execute(f"SELECT action FROM {SCHEMA}.outbox ORDER BY n").fetchall()
    actions = [a if isinstance(a, dict) else json.loads(a) for (a,) in rows]
    return [a["inReplyTo"] for a in actions if a["action"] == "send"]


def test_an_agent_that_takes_http_answers_through_the_host_s_endpoint(
    cluster: Cluster, tmp_path: Path
) -> None:
    async def test(harness: AcpHarness, engine: Engine, url: str) -> None:
        await harness.idle()
        assert [r.status for r in harness.results] == ["completed"]
        assert sends(url) == [DM]
        ((server,),) = [s["mcp_servers"] for s in records(tmp_path, "new_session")]
        assert server["type"] == "http" and server["url"].startswith("http://127.0.0.1:")
        (sent,) = records(tmp_path, "send")
        assert sent["event_id"] == DM and not sent["error"]
        saved = json.loads((tmp_path / f"{SCHEMA}.acp-lead.json").read_text(encoding="utf-8"))
        assert saved == {"slack:D0LEAD": "s1"}

    scenario(cluster, tmp_path, {"FAKE_ACP_HTTP": "1"}, test)


def test_an_agent_that_takes_only_stdio_is_down_with_what_to_do(
    cluster: Cluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="harness_bridge.runtime")

    async def test(harness: AcpHarness, engine: Engine, url: str) -> None:
        await until(lambda: "lead" in engine.unavailable)
        assert records(tmp_path, "new_session") == []  # no session without its tools
        assert sends(url) == []

    scenario(cluster, tmp_path, {}, test)
    (line,) = {r.getMessage() for r in caplog.records}
    assert "turn for lead: the ACP agent of lead takes MCP servers only over stdio" in line
    assert "mcpCapabilities.http" in line and "run this workspace on SQLite" in line
