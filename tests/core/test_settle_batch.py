"""Settles of several agents given in the same turn of the loop share one transaction: each
caller returns once that transaction has committed, and raises what ended it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from builders import LEAD, local_workspace, slack_body, slack_message

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.deliveries import Settled
from core.engine import Engine
from core.errors import StoreError
from core.sqlite_store import SQLiteStore
from core.store import StoredDelivery

AGENTS = ("lead", "worker-1", "worker-2")
Pending = dict[str, list[StoredDelivery]]  # each agent's deliveries not yet acknowledged


class CountingStore(SQLiteStore):
    """The ledger, counting its commits and failing them when told to."""

    def __init__(self) -> None:
        super().__init__()
        self.commits = 0
        self.refuse = False

    async def _commit(self) -> None:
        if self.refuse:
            await self._rollback()
            raise StoreError("cannot commit to the ledger: refused by the test")
        self.commits += 1
        await super()._commit()


async def ingested(store: CountingStore) -> tuple[Engine, Pending]:
    """Two channel messages naming the lead, each seen by every agent's connection."""
    engine = Engine(local_workspace(), store, VirtualClock(parse_time("2026-01-01T00:00:00Z")))
    await store.open()
    for n in range(2):
        body = slack_message(f"{1767225600 + n}.000100", f"<@{LEAD}> question {n}?")
        for agent in AGENTS:
            event = normalise(slack_body(body, via=agent))
            assert event is not None
            await engine.ingest(event)
    pending = {agent: await store.pending(agent) for agent in AGENTS}
    assert all(len(p) == 2 for p in pending.values())
    return engine, pending


def settling(test: Callable[[CountingStore, Engine, Pending], Awaitable[None]]) -> None:
    """Run `test` with a counting ledger, its engine and each agent's two pending deliveries."""

    async def run() -> None:
        store = CountingStore()
        engine, pending = await ingested(store)
        try:
            await test(store, engine, pending)
        finally:
            await store.close()

    asyncio.run(run())


def test_settles_given_in_the_same_turn_commit_once_and_return_once_committed() -> None:
    async def test(store: CountingStore, engine: Engine, pending: Pending) -> None:
        port = engine.deliveries
        store.commits = 0
        await asyncio.gather(*(port.settle([Settled(pending[a][0], 1)]) for a in AGENTS))
        assert store.commits == 1
        for agent in AGENTS:  # what each settled is durable when it returns
            assert [s.decision.event_id for s in await store.pending(agent)] == [
                pending[agent][1].decision.event_id
            ]
        # Given in another turn, a settle is its own transaction.
        await port.settle([Settled(pending["lead"][1], 1)])
        assert store.commits == 2

    settling(test)


def test_a_batch_that_cannot_commit_raises_in_every_caller_and_settles_nothing() -> None:
    async def test(store: CountingStore, engine: Engine, pending: Pending) -> None:
        store.refuse = True
        results = await asyncio.gather(
            *(engine.deliveries.settle([Settled(pending[a][0], 1)]) for a in AGENTS),
            return_exceptions=True,
        )
        assert all(isinstance(r, StoreError) for r in results)
        store.refuse = False
        for agent in AGENTS:
            assert len(await store.pending(agent)) == 2

    settling(test)


def test_a_caller_cancelled_while_it_waits_does_not_stop_the_batch_it_gave_to() -> None:
    async def test(store: CountingStore, engine: Engine, pending: Pending) -> None:
        port = engine.deliveries
        first = asyncio.create_task(port.settle([Settled(pending["lead"][0], 1)]))
        second = asyncio.create_task(port.settle([Settled(pending["worker-1"][0], 1)]))
        await asyncio.sleep(0)  # both have given theirs
        first.cancel()
        await second
        with pytest.raises(asyncio.CancelledError):
            await first
        assert len(await store.pending("lead")) == 1
        assert len(await store.pending("worker-1")) == 1

    settling(test)
