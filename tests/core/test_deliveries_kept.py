"""A delivery is made once, at ingest: its first send reads nothing back from the ledger, and
is told exactly as one made from the ledger; once acknowledged, dropped from the bound, after a
restart or a reload, it is made from the ledger again."""

from __future__ import annotations

import asyncio
from typing import Any

from builders import LEAD, local_workspace, slack_body, slack_message

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.deliveries import Framer, LedgerDeliveries, Settled
from core.engine import Engine
from core.sqlite_store import SQLiteStore
from core.store import StoredDelivery
from harness_bridge.envelope import deliver_request

EVENTS = 6


class CountingStore(SQLiteStore):
    """The ledger, counting the reads a delivery is made from."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def entry(self, seq: int) -> Any:
        self.reads += 1
        return await super().entry(seq)


async def ingested(store: CountingStore, **kept: int) -> tuple[Engine, list[StoredDelivery]]:
    engine = Engine(local_workspace(), store, VirtualClock(parse_time("2026-01-01T00:00:00Z")))
    if kept:
        engine.deliveries.kept = kept["kept"]
    await store.open()
    async with store.transaction():
        for n in range(EVENTS):
            body = slack_message(f"{1767225600 + n}.000100", f"<@{LEAD}> question {n}?")
            event = normalise(slack_body(body, via="lead"))
            assert event is not None
            await engine.ingest(event)
    return engine, await store.pending("lead")


def ledger_made(engine: Engine) -> LedgerDeliveries:
    """The same port with nothing kept: every delivery made from the ledger."""
    return LedgerDeliveries(engine.store, engine.clock, engine.framer, kept=0)


def test_a_first_send_reads_nothing_back_and_is_told_as_the_ledger_would_tell_it() -> None:
    async def run() -> None:
        store = CountingStore()
        engine, pending = await ingested(store)
        assert len(pending) == EVENTS
        store.reads = 0
        kept = [await engine.deliveries.delivery(s) for s in pending]
        assert store.reads == 0
        made = [await ledger_made(engine).delivery(s) for s in pending]
        assert store.reads == EVENTS
        for a, b in zip(kept, made, strict=True):
            assert deliver_request(a, compact=False, attempt=1) == deliver_request(
                b, compact=False, attempt=1
            )
        await store.close()

    asyncio.run(run())


def test_acknowledged_or_failed_deliveries_are_no_longer_kept() -> None:
    async def run() -> None:
        store = CountingStore()
        engine, pending = await ingested(store)
        port = engine.deliveries
        await port.settle([Settled(pending[0], 1), Settled(pending[1], 1, "refused")])
        store.reads = 0
        await port.delivery(pending[0])
        await port.delivery(pending[1])
        assert store.reads == 2
        await port.delivery(pending[2])
        assert store.reads == 2
        await store.close()

    asyncio.run(run())


def test_past_the_bound_the_oldest_are_made_from_the_ledger() -> None:
    async def run() -> None:
        store = CountingStore()
        engine, pending = await ingested(store, kept=2)
        store.reads = 0
        for stored in pending[-2:]:
            await engine.deliveries.delivery(stored)
        assert store.reads == 0
        for stored in pending[:-2]:
            await engine.deliveries.delivery(stored)
        assert store.reads == EVENTS - 2
        await store.close()

    asyncio.run(run())


def test_after_a_restart_or_a_reload_deliveries_are_made_from_the_ledger() -> None:
    async def run() -> None:
        store = CountingStore()
        engine, pending = await ingested(store)
        restarted = Engine(engine.workspace, store, engine.clock)
        store.reads = 0
        await restarted.deliveries.delivery(pending[0])
        assert store.reads == 1
        engine.deliveries.framer = Framer(engine.workspace, engine.glyphs, engine.classifier)
        await engine.deliveries.delivery(pending[1])
        assert store.reads == 2
        await store.close()

    asyncio.run(run())
