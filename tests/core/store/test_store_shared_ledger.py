"""Several processes on one ledger decide as one: each engine folds in what the others
committed before it decides (`Engine.catch_up`), and appends commit in sequence order (each
transaction on a shared ledger holds it from its start), so a reader past a sequence number
misses none before it. On SQLite, which one process owns, the ledger is not shared and nothing
of this runs."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from builders import (
    FLAT_BASE,
    HUMAN2,
    LEAD,
    W1,
    local_workspace,
    slack_body,
    slack_edit,
    slack_join,
)
from builders import slack_message as said
from store_backends import PostgresBackend, in_memory

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.decision import Decision, Disposition
from core.engine import Engine
from core.errors import StoreError
from core.events import ChatEvent
from core.mutes import record_mute
from core.postgres.connection import _HOLD, channel
from core.sqlite_store import SQLiteStore
from core.store import Store

START = parse_time("2026-01-01T00:00:00Z")
QUESTION = f"{FLAT_BASE + 10}.000100"


def conversation() -> list[dict[str, Any]]:
    """The agents join; someone asks the lead and adds a fragment (a follow-up of the same
    turn); the lead answers; its partner answers back without a name (continuity); another
    person asks worker-1 in the question's thread, and the asker follows up there."""

    def at(second: int, text: str, **more: Any) -> dict[str, Any]:
        return said(f"{FLAT_BASE + second}.000100", text, **more)

    return [
        *(slack_join(user) for user in (LEAD, W1)),
        at(10, f"<@{LEAD}> how do I restart nginx?"),
        at(12, "on ubuntu 22.04 that is"),
        at(20, "sudo systemctl restart nginx", user=LEAD),
        at(80, "it says unit not found"),
        at(90, f"<@{W1}> seen this before?", user=HUMAN2, thread_ts=QUESTION),
        at(95, "it was after the upgrade", user=HUMAN2, thread_ts=QUESTION),
        at(100, "and now it works", thread_ts=QUESTION),
    ]


async def decide_all(engines: list[Engine]) -> list[list[Decision]]:
    """Each event of `conversation` ingested by the engines in turn, each in its transaction
    at the event's time; the decisions stored for each, by agent."""
    clock = engines[0].clock
    assert isinstance(clock, VirtualClock)
    decided = []
    for n, body in enumerate(conversation()):
        event = normalise(slack_body(body))
        assert event is not None
        clock.set(max(clock.now(), event.created_at + timedelta(milliseconds=200)))
        engine = engines[n % len(engines)]
        async with engine.store.transaction():
            await engine.ingest(event)
        decided.append([d.decision for d in await engine.store.deliveries(event.event_id)])
    return decided


async def alone() -> list[list[Decision]]:
    return await in_memory(
        lambda store: decide_all([Engine(local_workspace(), store, VirtualClock(START))])
    )


@pytest.fixture
def postgres(request: pytest.FixtureRequest, tmp_path: Path) -> PostgresBackend:
    return PostgresBackend(request, tmp_path)


def test_two_engines_taking_turns_decide_as_one_engine_that_took_everything(
    postgres: PostgresBackend,
) -> None:
    async def together(stores: list[Store]) -> list[list[Decision]]:
        clock = VirtualClock(START)
        engines = [Engine(local_workspace(), store, clock) for store in stores]
        for engine in engines:
            await engine.rebuild()
        return await decide_all(engines)

    expected = asyncio.run(alone())
    reasons = {d.reason for decisions in expected for d in decisions}
    assert {"conversation_partner", "continuation"} <= reasons
    assert any(d.continues for decisions in expected for d in decisions)
    assert postgres.run_together(2, together) == expected


def test_an_engine_takes_in_the_claims_another_process_granted(
    postgres: PostgresBackend,
) -> None:
    async def together(stores: list[Store]) -> None:
        clock = VirtualClock(START + timedelta(seconds=11))
        first, second = (Engine(local_workspace(), store, clock) for store in stores)
        event = normalise(slack_body(said(QUESTION, f"<@{LEAD}> restart nginx?")))
        assert event is not None
        async with stores[0].transaction():
            await first.ingest(event)
            granted, _ = await first.claim("lead", event.event_id)
        assert granted.granted
        assert second.state.claim_holder(event.event_id, clock.now()) is None
        assert await second.catch_up() == 1
        assert second.state.claim_holder(event.event_id, clock.now()) == "lead"
        assert second.folded == first.folded

    postgres.run_together(2, together)


async def asked_through_the_first(stores: list[Store]) -> tuple[Engine, Engine, ChatEvent]:
    """An engine on each of two stores sharing one ledger and a virtual clock; the lead joins
    and is asked a question, both taken by the first."""
    clock = VirtualClock(START + timedelta(seconds=11))
    first, second = (Engine(local_workspace(), store, clock) for store in stores)
    joined = normalise(slack_body(slack_join(LEAD)))
    question = normalise(slack_body(said(QUESTION, f"<@{LEAD}> restart nginx?")))
    assert joined is not None and question is not None
    async with first.transaction():
        await first.ingest(joined)
        await first.ingest(question)
    return first, second, question


def test_an_engine_takes_in_the_answers_another_process_recorded(
    postgres: PostgresBackend,
) -> None:
    """The lead's harness runs in the first process, which records its answer; the question's
    edit reaches the second. It is decided as one engine would: edited after the answer, so
    the lead may clarify but is not asked the same question again, and it owes no answer to
    the question it answered (a responder chosen by fewest obligations sees it so)."""

    async def together(stores: list[Store]) -> Decision:
        first, second, question = await asked_through_the_first(stores)
        clock = first.clock
        assert isinstance(clock, VirtualClock)
        async with second.transaction():
            await second.catch_up()
        assert second.owed("lead") == [question.event_id]
        async with first.transaction():
            await first.dispose("lead", question.event_id, Disposition.RESPONDED, "answered")
        edited = f"{FLAT_BASE + 30}.000100"
        fixed = slack_edit(
            QUESTION, edited, f"<@{LEAD}> restart nginx?", f"<@{LEAD}> restart nginx!"
        )
        edit = normalise(slack_body(fixed))
        assert edit is not None
        clock.set(START + timedelta(seconds=31))
        async with second.transaction():
            outcome = await second.ingest(edit)
        assert second.owed("lead") == []
        (decision,) = [
            e.decision
            for e in outcome.emissions
            if getattr(e, "agent", None) == "lead" and hasattr(e, "decision")
        ]
        return decision

    decision = postgres.run_together(2, together)
    assert (decision.reason, decision.policy.value) == ("edited_after_response", "may_respond")


def test_an_engine_takes_in_what_another_process_decided_on_a_later_copy(
    postgres: PostgresBackend,
) -> None:
    """Slack sends a channel message to each agent's app. The first process takes the lead's
    copy while nothing says worker-1 is in the channel, and decides it for the lead alone; the
    second takes worker-1's copy and decides it for worker-1, whom it asks. The first process
    then knows worker-1 is in the channel and owes the question, as one engine that took both
    copies knows, and decides the asker's next line for worker-1 as that engine does."""
    question = said(QUESTION, f"<@{W1}> is the deploy done?")
    follow = said(f"{FLAT_BASE + 14}.000100", "it was started an hour ago")

    async def decide(engines: list[Engine]) -> tuple[list[str], list[Decision]]:
        first, second = engines[0], engines[-1]
        copies = [(first, "lead", question), (second, "worker-1", question), (first, "", follow)]
        for engine, via, body in copies:
            event = normalise(slack_body(body, via=via or None))
            assert event is not None
            async with engine.transaction():
                await engine.ingest(event, via or None)
        last = normalise(slack_body(follow))
        assert last is not None
        return first.owed("worker-1"), [
            d.decision for d in await first.store.deliveries(last.event_id)
        ]

    async def one() -> tuple[list[str], list[Decision]]:
        clock = VirtualClock(START + timedelta(seconds=15))
        return await in_memory(lambda store: decide([Engine(local_workspace(), store, clock)]))

    async def together(stores: list[Store]) -> tuple[list[str], list[Decision]]:
        clock = VirtualClock(START + timedelta(seconds=15))
        engines = [Engine(local_workspace(), store, clock) for store in stores]
        decided = await decide(engines)
        # A start folds the record's decisions once, with the event they were made for.
        restarted = Engine(local_workspace(), stores[0], clock)
        await restarted.rebuild()
        assert restarted.owed("worker-1") == decided[0]
        assert restarted.state.turns == engines[0].state.turns
        return decided

    expected = asyncio.run(one())
    assert len(expected[0]) == 1 and "worker-1" in [d.agent for d in expected[1]]
    assert postgres.run_together(2, together) == expected


def test_an_engine_takes_in_a_question_another_process_found_answered_in_the_gap(
    postgres: PostgresBackend,
) -> None:
    """After an outage the processes read what was missed. The first takes a late question to
    the lead; the second a late reply from another person that answers it, which makes the
    lead's waiting `must_respond` a `may_respond`. The first then no longer holds the lead as
    owing the question, as one engine that took both does not."""
    asked = said("1767225600.000100", f"<@{LEAD}> is the deploy blocked?")
    answered = said("1767225660.000100", "yes, CI is red", user=HUMAN2, thread_ts=asked["ts"])

    async def decide(engines: list[Engine]) -> list[str]:
        first, second = engines[0], engines[-1]
        for engine, body in ((first, asked), (second, answered)):
            event = normalise(slack_body(body, via="lead"))
            assert event is not None
            async with engine.transaction():
                await engine.ingest(event, "lead")
        async with first.transaction():
            await first.catch_up()
        return first.owed("lead")

    late = START + timedelta(minutes=4)  # read late, within the question's deadline

    async def one() -> list[str]:
        clock = VirtualClock(late)
        return await in_memory(lambda store: decide([Engine(local_workspace(), store, clock)]))

    async def together(stores: list[Store]) -> list[str]:
        clock = VirtualClock(late)
        return await decide([Engine(local_workspace(), store, clock) for store in stores])

    assert asyncio.run(one()) == []
    assert postgres.run_together(2, together) == []


def test_an_append_waits_for_another_process_s_open_transaction_and_commits_after_it(
    postgres: PostgresBackend,
) -> None:
    async def together(stores: list[Store]) -> None:
        first, second = stores
        assert first.shared and second.shared
        async with first.transaction():
            waiting = asyncio.create_task(second.append("late", "message", "x", {}, "t"))
            await asyncio.sleep(0.3)  # a real database's lock: no virtual clock can stand in
            assert not waiting.done()
            held = await first.append("early", "message", "x", {}, "t")
        later = await waiting
        assert held is not None and later is not None and held < later

    postgres.run_together(2, together)


def test_two_processes_writing_one_row_before_and_after_an_append_do_not_deadlock(
    postgres: PostgresBackend,
) -> None:
    """Each process queues the same notice (one idempotency key) and appends an event, in
    opposite orders: were the ledger held only from the append on, the first would wait for the
    second's lock while the second waited for the first's row."""
    action = {"kind": "post", "text": "over budget"}

    async def together(stores: list[Store]) -> None:
        first, second = stores
        row_written = asyncio.Event()

        async def row_then_append() -> int | None:
            async with first.transaction():
                await first.put_outbox("lead:budget:U1", "lead", action, "t")
                row_written.set()
                await asyncio.sleep(0.3)  # the other is at its row meanwhile, or at BEGIN
                return await first.append("one", "message", "x", {}, "t")

        async def append_then_row() -> int | None:
            await row_written.wait()
            async with second.transaction():
                seq = await second.append("two", "message", "x", {}, "t")
                await second.put_outbox("lead:budget:U1", "lead", action, "t")
                return seq

        one, two = await asyncio.gather(row_then_append(), append_then_row())
        assert one is not None and two is not None and one < two
        assert await first.outbox_has("lead:budget:U1")

    postgres.run_together(2, together)


def test_a_sqlite_ledger_is_not_shared(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = SQLiteStore(str(tmp_path / "ledger.sqlite3"))
        await store.open()
        try:
            assert not store.shared
            async with store.transaction():
                assert await store.append("e", "message", "x", {}, "t") == 1
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_transaction_the_server_ends_to_break_a_deadlock_fails_as_the_ledger_s_error(
    postgres: PostgresBackend,
) -> None:
    """c2a's own transactions cannot deadlock each other, but another client of the database
    can deadlock one: PostgreSQL then rolls it back, and the write fails as a `StoreError`, the
    error a platform's event is tried again on, not as an unknown one it is dropped on."""

    async def scenario(store: Store) -> None:
        await store.append("e", "message", "x", {}, "t")
        async with await psycopg.AsyncConnection.connect(postgres.url, autocommit=True) as other:
            await other.execute("SET deadlock_timeout = '10s'")  # the store's wait is the victim
            await other.execute("BEGIN")
            await other.execute("SELECT 1 FROM events WHERE id = 'e' FOR UPDATE")

            async def erase() -> None:
                async with store.transaction():  # holds the ledger, then waits for the row
                    await store.tombstone(["e"])

            erasing = asyncio.create_task(erase())
            await asyncio.sleep(0.3)  # a real database's lock: no virtual clock can stand in
            hold = "SELECT pg_advisory_xact_lock(%s::integer, hashtext(%s))"
            waiting = asyncio.create_task(other.execute(hold, (_HOLD, channel(None))))
            with pytest.raises(StoreError, match="rolled the transaction back: deadlock"):
                await erasing
            await waiting
            await other.execute("ROLLBACK")

    postgres.run(scenario)


def test_an_engine_sweeping_knows_what_another_process_recorded(
    postgres: PostgresBackend,
) -> None:
    """The lead is muted through the second process (a `/c2a mute` it took) while its
    question, taken by the first, waits past the answer deadline: the first process's sweep
    holds the reminder, as one engine that took both would."""

    async def together(stores: list[Store]) -> list[object]:
        first, second, question = await asked_through_the_first(stores)
        clock = first.clock
        assert isinstance(clock, VirtualClock)
        async with first.transaction():
            await first.store.mark_delivered(question.event_id, "lead", 1)
        async with second.transaction():
            await second.catch_up()
            await record_mute(second.store, second.state, "lead", clock.now(), None, muted=True)
        clock.advance(timedelta(minutes=6))
        async with first.transaction():
            return list(await first.sweep())

    assert postgres.run_together(2, together) == []
