"""The engine on each backend: events ingested into a store, the store closed and opened again
as after a restart, and the engine's memory rebuilt from the ledger is the memory it had; the
next event is decided as if nothing had stopped."""

from __future__ import annotations

import asyncio
import copy
from typing import Any, TypeVar

from builders import LEAD, W1, W2, local_workspace, slack_body, slack_edit, slack_join
from builders import slack_message as said
from store_backends import Backend, in_memory

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.decision import Disposition
from core.emission import Delivery
from core.engine import Engine
from core.ledger_fold import PAGE, fold_entry, pages
from core.store import Store

T = TypeVar("T")
START = parse_time("2026-01-01T00:00:01Z")


def bodies() -> list[tuple[dict[str, Any], str | None]]:
    """Joins, a question to the lead and its thread, chatter, an edit, a direct message and a
    role question, each with the agent whose connection received it (None: the channel's)."""
    question = "1767225601.000100"
    return [
        *((slack_body(slack_join(user)), None) for user in (LEAD, W1, W2)),
        (slack_body(said(question, f"<@{LEAD}> can you check the deploy?")), None),
        (slack_body(said("1767225602.000100", "on it", user=LEAD, thread_ts=question)), None),
        (slack_body(said("1767225603.000100", "lunch anyone?")), None),
        (slack_body(slack_edit("1767225604.000100", "1767225603.000100", "lunch?", "tea?")), None),
        (
            slack_body(said("1767225605.000100", "logs?", channel="D0W1", channel_type="im")),
            "worker-1",
        ),
        (slack_body(said("1767225607.000100", "<!subteam^S0BACK> who can look?")), None),
    ]


async def ingest_all(store: Store, clock: VirtualClock) -> Engine:
    """Every event of `bodies`, then the lead claims the question, worker-1 defers the direct
    message, and the role question's responder goes down, so it is handed to the other."""
    engine = Engine(local_workspace(), store, clock)
    ids = []
    for body, via in bodies():
        event = normalise(body)
        assert event is not None
        ids.append(event.event_id)
        async with store.transaction():
            await engine.ingest(event, via)
    question, direct, role = ids[3], ids[-2], ids[-1]
    async with store.transaction():
        claimed, _ = await engine.claim("lead", question)
        assert claimed.granted
        await engine.dispose("worker-1", direct, Disposition.DEFERRED, "later")
    engine.mark_unavailable(engine.state.claim_holder(role, clock.now()) or "")
    async with store.transaction():
        handed = [e for e in await engine.sweep() if isinstance(e, Delivery)]
    assert [d.decision.reason for d in handed] == ["handed_over"]
    return engine


def memory(engine: Engine) -> dict[str, Any]:
    """A copy of what the engine remembers that the ledger must give back."""
    state = engine.state
    return copy.deepcopy(
        {
            "messages": state.messages,
            "members": state.members,
            "threads": state.threads,
            "chains": state.chains,
            "claims": state.claims,
            "obligations": state.obligations,
            "left": state.left,
            "escalated": state.escalated,
        }
    )


async def decided(engine: Engine, body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Ingest one more event; each agent's policy and mode for it."""
    event = normalise(slack_body(body))
    assert event is not None
    async with engine.store.transaction():
        await engine.ingest(event)
    return [
        (d.decision.agent, str(d.decision.policy), str(d.decision.mode))
        for d in await engine.store.deliveries(event.event_id)
    ]


def test_a_restarted_engine_rebuilds_the_memory_it_had_and_decides_on_alike(
    backend: Backend,
) -> None:
    clock = VirtualClock(START)
    follow_up = said("1767225606.000100", f"<@{W1}> and the dashboards?")

    async def before(store: Store) -> dict[str, Any]:
        engine = await ingest_all(store, clock)
        [deferred] = await store.deliveries(
            engine.state.messages["slack:D0W1:1767225605.000100"].event_id
        )
        assert deferred.disposition is Disposition.DEFERRED
        return memory(engine)

    async def restarted(store: Store) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
        engine = Engine(local_workspace(), store, clock)
        assert await engine.rebuild() == len(bodies())
        return memory(engine), await decided(engine, follow_up)

    async def never_stopped(store: Store) -> list[tuple[str, str, str]]:
        return await decided(await ingest_all(store, clock), follow_up)

    remembered = backend.run(before)
    assert all(remembered[part] for part in ("messages", "threads", "claims", "obligations"))
    rebuilt, next_decisions = backend.run(restarted)
    assert rebuilt == remembered
    assert next_decisions == asyncio.run(in_memory(never_stopped))


def folded(engine: Engine) -> dict[str, Any]:
    """What a fold of the ledger's records gives the engine (claims are not records)."""
    remembered = memory(engine)
    del remembered["claims"]
    return remembered | {"late questions": copy.deepcopy(engine.state.late_questions)}


async def folded_one_by_one(store: Store) -> dict[str, Any]:
    """The ledger folded record by record, each with its event's own receipts and deliveries
    read apart, as the fold read them before it read pages."""
    engine = Engine(local_workspace(), store, VirtualClock(START))
    async for entry in store.ledger():
        event_id = entry.data.get("event_id", entry.id)
        received, stored = await store.receipts(event_id), await store.deliveries(event_id)
        fold_entry(entry, received, stored, engine.state, engine.followup, engine.decider)
    return folded(engine)


async def folded_in_pages(store: Store, size: int) -> dict[str, Any]:
    """The ledger folded from pages of `size` records; each page gives every record the
    receipts and deliveries its event has when read apart."""
    engine = Engine(local_workspace(), store, VirtualClock(START))
    async for page in pages(store, 0, size):
        assert 0 < len(page.entries) <= size
        for entry in page.entries:
            event_id = entry.data.get("event_id", entry.id)
            assert page.receipts_of(entry) == await store.receipts(event_id)
            assert page.deliveries_of(entry) == await store.deliveries(event_id)
            fold_entry(
                entry,
                page.receipts_of(entry),
                page.deliveries_of(entry),
                engine.state,
                engine.followup,
                engine.decider,
            )
    return folded(engine)


def test_a_fold_in_pages_remembers_what_folding_record_by_record_remembers(
    backend: Backend,
) -> None:
    clock = VirtualClock(START)

    async def scenario(store: Store) -> None:
        await ingest_all(store, clock)
        reference = await folded_one_by_one(store)
        assert reference["messages"] and reference["threads"] and reference["obligations"]
        for size in (1, 2, 3, len(bodies()), PAGE):
            assert await folded_in_pages(store, size) == reference, size
        engine = Engine(local_workspace(), store, clock)
        assert await engine.rebuild() == len(bodies())
        assert folded(engine) == reference
        everything = [entry.seq async for entry in store.ledger()]
        after_four = [entry.seq async for page in pages(store, 4, 2) for entry in page.entries]
        assert after_four == everything[4:]  # a catch-up's pages start after what it folded

    backend.run(scenario)
