"""The outbox's sending rounds in a workspace's run: woken by what is queued, one bad round
does not end sending, and `finish` sends what is due once more, bounded by its grace. The
sweep: woken by a change of who is down, and waiting longer after each sweep that failed on
something other than an outage. The retention's pruning: at the start and every hour, by the
setting of the moment, going on after a round that failed."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from c2a.run_loops import (
    PRUNE_EVERY,
    SWEEP_EVERY,
    SWEEP_MOST_EVERY,
    OutboxLoop,
    retain,
    sweep,
    sweep_delay,
)
from core.availability import Unavailable
from core.clock import VirtualClock
from core.errors import StoreError
from core.outbox import Outbox
from core.retention import RetentionSetting
from core.sqlite_store import SQLiteStore
from core.store_records import PrunedBatch


class Rounds(Outbox):
    """An outbox whose rounds are counted; the first fails, and each can be held up."""

    def __init__(self) -> None:
        super().__init__(SQLiteStore(":memory:"), VirtualClock(), {})
        self.rounds = 0
        self.hold = asyncio.Event()
        self.hold.set()

    async def drain(self) -> int:
        self.rounds += 1
        await self.hold.wait()
        if self.rounds == 1:
            raise RuntimeError("the platform said no")
        return 0


def test_a_woken_loop_sends_at_once_and_finish_sends_once_more(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> int:
        outbox: Any = Rounds()
        loop = OutboxLoop("ws", outbox)
        loop.start()
        while outbox.rounds < 1:  # the first round fails, and sending goes on
            await asyncio.sleep(0)
        loop.wake()
        while outbox.rounds < 2:
            await asyncio.sleep(0)
        await loop.finish(5.0)  # one round more, then the loop ends
        assert loop.task is not None and loop.task.done()
        return int(outbox.rounds)

    with caplog.at_level(logging.ERROR, logger="core.outbox"):
        assert asyncio.run(scenario()) == 3
    assert "ws: outbox round failed: the platform said no" in caplog.text


def test_a_round_that_outlasts_the_grace_is_cancelled_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> asyncio.Task[None] | None:
        outbox: Any = Rounds()
        outbox.rounds = 1  # past the failing first round
        outbox.hold.clear()
        loop = OutboxLoop("ws", outbox)
        loop.start()
        await loop.finish(0.01)
        return loop.task

    with caplog.at_level(logging.WARNING, logger="c2a.run"):
        task = asyncio.run(scenario())
    assert task is not None and task.cancelled()
    assert "the outbox did not finish in 0 s" in caplog.text


def test_the_sweep_runs_at_once_when_an_agent_goes_down_or_comes_back() -> None:
    """🚧 in place of 👀, and back, and a role question handed over, need not wait for the
    next sweep: a change of who is down wakes it; finding a down agent down again does not."""

    class Swept:
        def __init__(self) -> None:
            self.unavailable = Unavailable()
            self.sweeps = 0

        async def sweep(self) -> list[Any]:
            self.sweeps += 1
            return []

    async def scenario() -> None:
        engine: Any = Swept()
        store = SQLiteStore(":memory:")
        await store.open()
        engine.transaction = store.transaction
        loop = asyncio.create_task(sweep("ws", engine, lambda _: asyncio.sleep(0)))
        now = VirtualClock().now()

        async def swept(sweeps: int) -> None:
            while engine.sweeps < sweeps:
                await asyncio.sleep(0)

        async with asyncio.timeout(SWEEP_EVERY / 2):  # well before the timed sweep
            engine.unavailable.down("worker-1", now)
            await swept(1)
            engine.unavailable.up("worker-1")
            await swept(2)
            engine.unavailable.down("worker-1", now)
            await swept(3)
            engine.unavailable.down("worker-1", now)  # already down: no change
            for _ in range(50):
                await asyncio.sleep(0)
            assert engine.sweeps == 3
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        await store.close()

    asyncio.run(scenario())


def test_a_sweep_that_keeps_failing_is_tried_less_and_less_often(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each failed sweep leaves the whole ledger to be folded again at the next event: a sweep
    failing on a bug every five seconds would have every event wait for that. The wait doubles
    after each such failure, up to five minutes, and is five seconds again after a sweep that
    works; an outage of the database is no reason to wait longer."""
    outage = StoreError("the ledger is unreachable", {"unreachable": "db:5432"})
    outcomes: list[Exception | None] = [
        RuntimeError("a bad record"),
        RuntimeError("a bad record"),
        RuntimeError("a bad record"),
        None,
        outage,
        RuntimeError("a bad record"),
    ]

    class Failing:
        def __init__(self) -> None:
            self.unavailable = Unavailable()

        async def sweep(self) -> list[Any]:
            outcome = outcomes.pop(0) if outcomes else None
            if outcome is not None:
                raise outcome
            return []

    waits: list[float] = []

    async def pause(changed: asyncio.Event, seconds: float) -> None:
        waits.append(seconds)
        if len(waits) > 7:
            await asyncio.Event().wait()  # until cancelled

    async def scenario() -> None:
        engine: Any = Failing()
        store = SQLiteStore(":memory:")
        await store.open()
        engine.transaction = store.transaction
        loop = asyncio.create_task(sweep("ws", engine, lambda _: asyncio.sleep(0), pause))
        async with asyncio.timeout(5):
            while len(waits) < 8:
                await asyncio.sleep(0)
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        await store.close()

    with caplog.at_level(logging.DEBUG, logger="c2a.run"):
        asyncio.run(scenario())
    assert waits == [5.0, 10.0, 20.0, 40.0, 5.0, 5.0, 10.0, 5.0]
    assert "ws: sweep failed: a bad record (next in 40 s)" in caplog.text
    assert [sweep_delay(n) for n in (0, 5, 6, 1_000)] == [5.0, 160.0, 300.0, SWEEP_MOST_EVERY]


class Batches:
    """A store's `Retention` that writes down each batch's moment and drops `left` rows of
    audit, a batch at a time; the second round's first batch fails."""

    def __init__(self, left: int) -> None:
        self.left = left
        self.asked: list[datetime] = []

    async def prune_batch(self, before: datetime, limit: int, after: int = 0) -> PrunedBatch:
        self.asked.append(before)
        if len(self.asked) == 3:
            raise StoreError("the ledger is locked")
        dropped = min(self.left, limit)
        self.left -= dropped
        return PrunedBatch({"events": 0, "audit": dropped}, after)


def test_retention_prunes_at_the_start_and_every_hour_by_the_setting_of_the_moment(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = VirtualClock(datetime(2026, 11, 28, tzinfo=UTC))
    store = Batches(left=3)
    settings = iter([None, RetentionSetting(days=30), RetentionSetting(days=30)])
    waited: list[float] = []
    told: list[datetime] = []

    async def wait(seconds: float) -> None:
        waited.append(seconds)
        clock.advance(timedelta(seconds=seconds))
        if len(waited) == 3:
            raise asyncio.CancelledError

    async def pruned(before: datetime) -> dict[str, int]:
        told.append(before)
        return {"webchat messages": 2}  # what else went: the chat's own record

    async def scenario() -> None:
        with pytest.raises(asyncio.CancelledError):
            await retain("local", store, clock, lambda: next(settings), pruned, wait)

    with caplog.at_level(logging.INFO, logger="c2a.run"):
        asyncio.run(scenario())
    assert waited == [PRUNE_EVERY] * 3  # none the first hour; one batch, then the empty one
    assert store.asked == [datetime(2026, 10, 29, 1, tzinfo=UTC)] * 2 + [
        datetime(2026, 10, 29, 2, tzinfo=UTC)
    ]
    assert store.left == 0
    assert told == store.asked[:1]  # how far it pruned; not after the round that failed
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert said == [
        ("INFO", "local: pruned what is older than 30 days: audit 3, webchat messages 2"),
        ("ERROR", "local: pruning failed: the ledger is locked"),
    ]
