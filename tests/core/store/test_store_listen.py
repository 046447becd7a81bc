"""Wake-ups between processes on one PostgreSQL ledger: a commit that leaves a delivery or an
outbound action notifies every listening process, only once it commits, and a listener whose
connection drops connects again and asks for everything to be looked at."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg
import pytest
from store_backends import PostgresBackend
from test_store_deliveries import asked

from core.postgres.listen import EVERYTHING, Listener
from core.store import Store

AT = "2026-01-01T00:00:00Z"


def test_a_commit_with_deliveries_or_outbound_actions_wakes_the_listeners(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    backend = PostgresBackend(request, tmp_path)

    async def scenario(store: Store) -> tuple[list[str], list[str]]:
        listener = Listener(backend.url, None)

        async def write() -> list[str]:
            async with store.transaction():
                seq = await store.append("e1", "message", "ann", {"text": "hi"}, AT)
                assert seq is not None
                await store.record_decisions(seq, [asked("e1", "lead"), asked("e1", "w")], AT)
                await store.put_outbox("k1", "lead", {"text": "hi"}, AT)
                await store.put_outbox("k1", "lead", {"text": "again"}, AT)  # not queued
                await asyncio.sleep(0.3)
                before_commit = list(heard)
            return before_commit

        heard: list[str] = []
        task = asyncio.create_task(listener.run(heard.append))
        await asyncio.wait_for(listener.listening.wait(), 10)
        before = await write()
        await asyncio.sleep(0.3)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return before, heard

    before, after = backend.run(scenario)
    assert before == []
    assert sorted(after) == ["deliveries lead", "deliveries w", "outbox"]


def test_a_listener_that_lost_its_connection_comes_back_and_asks_for_everything(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    backend = PostgresBackend(request, tmp_path)

    async def scenario(store: Store) -> list[str]:
        listener = Listener(backend.url, None, retry=0.05)
        heard: list[str] = []
        task = asyncio.create_task(listener.run(heard.append))
        await asyncio.wait_for(listener.listening.wait(), 10)
        async with await psycopg.AsyncConnection.connect(backend.url, autocommit=True) as admin:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE query LIKE 'LISTEN%%' AND pid <> pg_backend_pid()"
            )
        for _ in range(100):
            if EVERYTHING in heard:
                break
            await asyncio.sleep(0.05)
        await store.put_outbox("k1", "lead", {"text": "hi"}, AT)
        await asyncio.sleep(0.3)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return heard

    assert backend.run(scenario) == [EVERYTHING, "outbox"]
