"""The engine holds the newest messages only (`core.state_messages`): a message it evicted is
decided as one it never saw, except that its delete still blanks the ledger's versions and an
edit of it once deleted is still dropped; with a bound larger than the traffic nothing
changes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from sys import intern
from typing import Any, TypeVar

from builders import (
    LEAD,
    W1,
    local_workspace,
    slack_body,
    slack_delete,
    slack_edit,
    slack_join,
    slack_message,
    slack_reaction,
)
from store_backends import Backend, in_memory

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.emission import Cancel, Delivery, Emission
from core.engine import Engine
from core.state_recent import Recent
from core.state_records import message_key
from core.store import Store

T = TypeVar("T")
Body = dict[str, Any]
START = parse_time("2026-01-01T00:00:01Z")
OLD = "1767225601.000100"  # the message every test comes back to
SECRET = "the staging password is hunter2"


def ts(second: int) -> str:
    return f"{1767225600 + second}.000100"


def joins() -> list[Body]:
    return [slack_join(user) for user in (LEAD, W1)]


def chatter(first: int, count: int) -> list[Body]:
    """`count` messages after `OLD`, one a second, enough to evict it from a small bound."""
    return [slack_message(ts(first + n), f"note {n} on the rollout") for n in range(count)]


def run(scenario: Callable[[Store], Awaitable[T]]) -> T:
    return asyncio.run(in_memory(scenario))


def summary(emission: Emission) -> tuple[str, ...]:
    """What an emission is and for whom (a delivery's payload carries a per-process id)."""
    if isinstance(emission, Delivery):
        return ("delivery", emission.decision.agent, emission.decision.event_id)
    if isinstance(emission, Cancel):
        return ("cancel", emission.agent, emission.event_id, emission.reason)
    return (type(emission).__name__, str(getattr(emission, "agent", "")))


async def ingest(engine: Engine, body: Body) -> tuple[str, list[tuple[str, ...]]]:
    event = normalise(slack_body(body))
    assert event is not None
    async with engine.store.transaction():
        outcome = await engine.ingest(event)
    return event.event_id, [summary(emission) for emission in outcome.emissions]


async def decisions(store: Store, event_id: str) -> list[tuple[str, ...]]:
    return [
        (
            d.decision.agent,
            str(d.decision.policy),
            str(d.decision.mode),
            d.decision.reason,
            str(d.decision.directedness),
            str(d.decision.supersedes),
        )
        for d in await store.deliveries(event_id)
    ]


def engine_holding(store: Store, limit: int) -> Engine:
    engine = Engine(local_workspace(), store, VirtualClock(START))
    engine.state.messages = Recent(limit)
    return engine


def outcomes(
    bodies: list[Body], limit: int
) -> list[tuple[list[tuple[str, ...]], list[tuple[str, ...]]]]:
    """Each event's stored decisions and emissions, from an engine holding `limit` messages."""

    async def scenario(store: Store) -> list[tuple[list[tuple[str, ...]], list[tuple[str, ...]]]]:
        engine = engine_holding(store, limit)
        found = []
        for body in bodies:
            event_id, emitted = await ingest(engine, body)
            found.append((await decisions(store, event_id), emitted))
        return found

    return run(scenario)


def test_the_oldest_message_is_evicted_first_and_a_held_one_is_not_replaced() -> None:
    def key(second: int) -> str:
        return message_key("slack", "C0GEN", ts(second))

    async def scenario(store: Store) -> list[object]:
        engine = engine_holding(store, 2)
        held = engine.state.messages
        seen: list[object] = []
        await ingest(engine, slack_message(ts(1), "a"))
        first = held[key(1)]
        await ingest(engine, slack_message(ts(2), "b"))
        again = normalise(slack_body(slack_message(ts(1), "a, folded again")))
        assert again is not None
        engine.state.apply(again, [])  # the same message once more: kept as it was
        await ingest(engine, slack_edit(ts(1), ts(3), "a", "a, edited"))  # changed in place
        seen.append(held[key(1)] is first)
        seen.append(list(held) == [key(1), key(2)])  # not moved to the back
        await ingest(engine, slack_message(ts(4), "c"))
        seen.append(list(held) == [key(2), key(4)])
        await ingest(engine, slack_message(ts(5), "d"))
        seen.append(list(held) == [key(4), key(5)] and len(held) == 2)
        return seen

    assert run(scenario) == [True, True, True, True]


def test_a_delete_of_an_evicted_message_still_blanks_it_and_its_edits_in_the_ledger(
    backend: Backend,
) -> None:
    edit = slack_edit(OLD, ts(2), SECRET, f"{SECRET}!")
    delete = slack_delete(OLD, ts(20), SECRET)

    async def scenario(
        store: Store,
    ) -> tuple[list[str], list[tuple[str, ...]], list[tuple[str, ...]]]:
        engine = engine_holding(store, 3)
        for body in [*joins(), slack_message(OLD, f"<@{LEAD}> {SECRET}"), edit, *chatter(3, 5)]:
            await ingest(engine, body)
        assert engine.state.target(normalise(slack_body(delete))) is None  # type: ignore[arg-type]
        _, cancels = await ingest(engine, delete)
        late_edit = slack_edit(OLD, ts(21), "", f"{SECRET} again")
        edit_id, _ = await ingest(engine, late_edit)
        texts = [entry.data["text"] async for entry in store.ledger()]
        return texts, cancels, await decisions(store, edit_id)

    texts, cancels, after_delete = backend.run(scenario)
    assert not any("hunter2" in text for text in texts[:-1])  # all but the late edit's own
    assert cancels == []  # as for a message never seen: no one is held as told of it
    assert after_delete == []  # an edit of a deleted message is dropped, held or not


def test_a_delete_of_a_held_message_still_cancels_every_delivery() -> None:
    bodies = [*joins(), slack_message(OLD, f"<@{LEAD}> {SECRET}"), slack_delete(OLD, ts(3), SECRET)]
    *_, (_, emitted) = outcomes(bodies, 3)
    assert {(e[1], e[3]) for e in emitted if e[0] == "cancel"} == {
        ("lead", "deleted"),
        ("worker-1", "deleted"),
    }


def test_an_edit_or_reaction_of_an_evicted_message_is_decided_as_for_one_never_seen() -> None:
    later = [
        slack_edit(OLD, ts(30), "can you check the deploy", f"<@{LEAD}> can you check it now"),
        slack_reaction(OLD, "white_check_mark", item_user=LEAD, event_ts=ts(31)),
    ]
    said = slack_message(OLD, f"<@{LEAD}> can you check the deploy", user=LEAD)
    evicted = outcomes([*joins(), said, *chatter(3, 4), *later], 2)[-2:]
    never_seen = outcomes([*joins(), *chatter(3, 4), *later], 2)[-2:]
    held = outcomes([*joins(), said, *chatter(3, 4), *later], 100)[-2:]
    assert [d for d, _ in evicted] == [d for d, _ in never_seen]
    assert evicted[0][0] != held[0][0]  # held, the edit supersedes what each agent was told


def test_with_a_bound_larger_than_the_conversation_nothing_changes() -> None:
    bodies = [
        *joins(),
        slack_message(OLD, f"<@{LEAD}> can you check the deploy?"),
        slack_message(ts(2), "on it", user=LEAD, thread_ts=OLD),
        slack_edit(OLD, ts(3), "can you check the deploy?", f"<@{W1}> can you check the deploy?"),
        slack_message(ts(4), "thanks!", thread_ts=OLD),
        slack_reaction(ts(2), "white_check_mark", item_user=LEAD, event_ts=ts(5)),
        *chatter(6, 3),
        slack_delete(ts(6), ts(10), "note 0 on the rollout"),
    ]
    assert outcomes(bodies, 12) == outcomes(bodies, 10**6)


def test_a_rebuilt_record_shares_its_strings_instead_of_copying_them_from_the_ledger(
    backend: Backend,
) -> None:
    said = slack_message(OLD, f"<@{LEAD}> can you check the deploy?")

    async def ingested(store: Store) -> None:
        engine = engine_holding(store, 3)
        for body in [*joins(), said]:
            await ingest(engine, body)

    async def rebuilt(store: Store) -> list[bool]:
        engine = Engine(local_workspace(), store, VirtualClock(START))
        await engine.rebuild()
        [held] = engine.state.messages.values()
        kept = list(held.delivered.items())
        assert [agent for agent, _ in kept] == ["lead", "worker-1"]
        return [
            key is intern(key)
            and decision.agent is key
            and decision.event_id is held.event_id
            and decision.reason is intern(decision.reason)
            for key, decision in kept
        ]

    backend.run(ingested)
    assert backend.run(rebuilt) == [True, True]
