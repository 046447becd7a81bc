"""A PostgreSQL server restarted under an open store: while it is down every call raises
`StoreError` (nothing half-done, no foreign exception), the loss is said once each way, and
once it is back the store goes on with a new connection, nothing committed lost. The server is
one of this module's own, since it is stopped and started again."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest
from postgres_cluster import Cluster, throwaway

from core.errors import StoreError
from core.postgres.listen import EVERYTHING, Listener
from core.postgres_store import PostgresStore

AT = "2026-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from throwaway()


def said(caplog: pytest.LogCaptureFixture, words: str) -> int:
    return sum(words in r.getMessage() for r in caplog.records)


def test_a_store_pauses_while_the_server_is_down_and_resumes_when_it_is_back(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    url = cluster.database()

    async def scenario() -> list[str]:
        store = PostgresStore(url, schema="team")
        await store.open()
        try:
            async with store.transaction():
                await store.append("e1", "message", "ann", {"text": "before"}, AT)
            cluster.stop_server()
            for n in range(3):
                with pytest.raises(StoreError):
                    async with store.transaction():
                        await store.append(f"down{n}", "message", "ann", {}, AT)
                with pytest.raises(StoreError):
                    await store.sequence_of("e1")
            cluster.start_server()
            async with store.transaction():
                await store.append("e2", "message", "ann", {"text": "after"}, AT)
            return [e for e in ("e1", "down0", "e2") if await store.sequence_of(e) is not None]
        finally:
            await store.close()

    assert asyncio.run(scenario()) == ["e1", "e2"]
    assert said(caplog, "is unreachable") == 1
    assert said(caplog, "answers again: resuming") == 1
    assert not [r for r in caplog.records if r.exc_info]


def test_a_connection_idle_through_a_restart_is_made_again_before_it_is_used(
    cluster: Cluster,
) -> None:
    url = cluster.database()

    async def scenario() -> tuple[bool, list[str]]:
        store = PostgresStore(url, schema="team")
        listener = Listener(url, "team", retry=0.05)
        heard: list[str] = []
        await store.open()
        listening = asyncio.create_task(listener.run(heard.append))
        try:
            await asyncio.wait_for(listener.listening.wait(), 10)
            cluster.stop_server()
            cluster.start_server()
            async with store.transaction():  # its socket was closed by the server meanwhile
                await store.append("e1", "message", "ann", {"text": "after"}, AT)
            await asyncio.wait_for(listener.listening.wait(), 10)
            await store.put_outbox("k1", "lead", {"text": "hi"}, AT)
            for _ in range(100):
                if "outbox" in heard:
                    break
                await asyncio.sleep(0.05)
            return await store.sequence_of("e1") is not None, heard
        finally:
            listening.cancel()
            await asyncio.gather(listening, return_exceptions=True)
            await store.close()

    stored, heard = asyncio.run(scenario())
    assert stored
    assert heard == [EVERYTHING, "outbox"]
