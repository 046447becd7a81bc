"""A delivery's first attempt is reserved when the engine records its decision: the host that
decided it sends attempt 1 without writing again, once the decision has committed; any other
send (a retry, one after a restart, one no longer remembered, one the engine did not decide)
is written as the next attempt before it goes, so an attempt number never comes twice."""

from __future__ import annotations

import asyncio
from pathlib import Path

from builders import LEAD, local_workspace, slack_body, slack_message

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.decision import Decision, Directedness, InjectionMode, Policy, Priority
from core.engine import Engine
from core.errors import StoreError
from core.sqlite_store import SQLiteStore

EVENTS = 3
AGENT = "lead"
AT = "2026-01-01T00:00:00Z"


class NotingStore(SQLiteStore):
    """The ledger, listing the attempts noted."""

    def __init__(self, path: str = ":memory:") -> None:
        super().__init__(path)
        self.noted: list[int] = []

    async def note_attempt(self, event_id: str, agent: str, attempt: int) -> None:
        self.noted.append(attempt)
        await super().note_attempt(event_id, agent, attempt)


def engine_on(store: SQLiteStore, kept: int | None = None) -> Engine:
    engine = Engine(local_workspace(), store, VirtualClock(parse_time(AT)))
    if kept is not None:
        engine.deliveries.kept = kept
    return engine


async def decided(store: SQLiteStore, kept: int | None = None) -> Engine:
    """`store` opened, and `EVENTS` questions to the lead ingested in one transaction."""
    await store.open()
    engine = engine_on(store, kept)
    async with store.transaction():
        await ingest(engine)
    return engine


async def ingest(engine: Engine, first: int = 0, count: int = EVENTS) -> None:
    for n in range(first, first + count):
        body = slack_message(f"{1767225600 + n}.000100", f"<@{LEAD}> question {n}?")
        event = normalise(slack_body(body, via="lead"))
        assert event is not None
        await engine.ingest(event)


def test_a_first_send_of_a_delivery_decided_here_goes_as_attempt_one_writing_nothing() -> None:
    async def run() -> tuple[list[int], list[int], list[int], list[int]]:
        store = NotingStore()
        engine = await decided(store)
        pending = await store.pending(AGENT)
        first = await engine.deliveries.next_attempts(pending)
        noted_first = list(store.noted)
        again = await engine.deliveries.next_attempts(await store.pending(AGENT))
        return [s.attempt for s in pending], first, noted_first, again

    ledger, first, noted_first, again = asyncio.run(run())
    assert ledger == [1] * EVENTS  # reserved when decided
    assert first == [1] * EVENTS and noted_first == []
    assert again == [2] * EVENTS  # a second send, unacknowledged the first time, is written


def test_after_a_restart_the_first_send_goes_as_attempt_two(tmp_path: Path) -> None:
    async def run() -> tuple[list[int], list[int]]:
        path = str(tmp_path / "ledger.db")
        store = NotingStore(path)
        await decided(store)
        await store.close()  # the host dies: it may have sent attempt 1 of each
        store = NotingStore(path)
        await store.open()
        engine = engine_on(store)
        sent = await engine.deliveries.next_attempts(await store.pending(AGENT))
        await store.close()
        return sent, store.noted

    sent, noted = asyncio.run(run())
    assert sent == [2] * EVENTS and noted == [2] * EVENTS


def test_a_delivery_no_longer_remembered_or_not_decided_by_the_engine_is_written_first() -> None:
    async def run() -> tuple[list[int], list[int]]:
        store = NotingStore()
        await store.open()
        engine = engine_on(store, kept=1)
        async with store.transaction():
            await ingest(engine)  # only the newest is remembered
            seq = await store.append("r1", "reminder", "system", {"text": "r"}, AT)
            assert seq is not None
            reminder = Decision(
                "r1",
                AGENT,
                Directedness.TO_ME,
                Policy.MUST_RESPOND,
                InjectionMode.BUFFERED,
                "reminder",
                Priority.HIGH,
            )
            await store.record_decisions(seq, [reminder], AT)  # not reserved
        sent = await engine.deliveries.next_attempts(await store.pending(AGENT))
        return sent, store.noted

    sent, noted = asyncio.run(run())
    assert sent == [2, 2, 1, 1]  # two forgotten, the newest reserved, the reminder's first
    assert noted == [2, 2, 1]


def test_a_reserved_first_send_waits_for_the_decision_to_commit_and_fails_if_rolled_back() -> None:
    async def run(fail: bool) -> tuple[list[str], object]:
        store = SQLiteStore()
        await store.open()
        engine = engine_on(store)
        steps: list[str] = []
        decided = asyncio.Event()
        release = asyncio.Event()

        async def ingesting() -> None:
            async with store.transaction():
                await ingest(engine, count=1)
                decided.set()
                await release.wait()
                steps.append("committing")
                if fail:
                    raise RuntimeError("the rest of the batch fails")

        async def sending() -> list[int]:
            await decided.wait()
            pending = await store.pending(AGENT)  # the open transaction's rows are read
            attempts = await engine.deliveries.next_attempts(pending)
            steps.append("sent")
            return attempts

        tasks = [asyncio.create_task(ingesting()), asyncio.create_task(sending())]
        await decided.wait()
        for _ in range(5):
            await asyncio.sleep(0)
        assert steps == []  # the decision is not durable yet: nothing may go
        release.set()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        return steps, outcomes[1]

    steps, sent = asyncio.run(run(fail=False))
    assert steps == ["committing", "sent"] and sent == [1]
    steps, raised = asyncio.run(run(fail=True))
    assert steps == ["committing"]
    assert isinstance(raised, StoreError)


def test_with_nothing_remembered_every_send_is_written() -> None:
    async def run() -> tuple[list[int], list[int]]:
        store = NotingStore()
        engine = await decided(store, kept=0)
        return await engine.deliveries.next_attempts(await store.pending(AGENT)), store.noted

    sent, noted = asyncio.run(run())
    assert sent == noted == [2] * EVENTS
