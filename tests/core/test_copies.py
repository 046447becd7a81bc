"""A platform's later copies of one event, through agents already decided, are only receipts:
no decision is asked of the ledger or made again; an agent that could not see the event at
first is still decided on its copy, and a first arrival rolled back leaves nothing behind."""

from __future__ import annotations

import asyncio

import pytest
from builders import LEAD, local_workspace, slack_body, slack_message

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.copies import DecidedCopies
from core.emission import Outcome
from core.engine import Engine
from core.events import ChatEvent
from core.sqlite_store import SQLiteStore

TS = "1767225601.000100"
EVENT_ID = f"slack:T0LOCAL:C0GEN:{TS}"
AGENTS = ("lead", "worker-1", "worker-2")


class CountingStore(SQLiteStore):
    """The ledger, counting how often the agents decided for an event are read from it."""

    def __init__(self) -> None:
        super().__init__()
        self.decided_reads = 0

    async def decided_agents(self, event_id: str) -> set[str]:
        self.decided_reads += 1
        return await super().decided_agents(event_id)


def copy_for(via: str) -> ChatEvent:
    """The message as `via`'s connection receives it."""
    event = normalise(slack_body(slack_message(TS, f"<@{LEAD}> deploy?"), via=via))
    assert event is not None
    return event


async def started(members: tuple[str, ...] = ()) -> tuple[Engine, CountingStore]:
    store = CountingStore()
    await store.open()
    engine = Engine(local_workspace(), store, VirtualClock(parse_time("2026-01-01T00:00:00Z")))
    if members:
        engine.note_members(copy_for("lead").conversation.scope, set(members))
    return engine, store


async def arrive(engine: Engine, via: str) -> Outcome:
    """`via`'s copy of the message, in a transaction of its own."""
    async with engine.transaction():
        return await engine.ingest(copy_for(via), via)


async def rolled_back(engine: Engine) -> None:
    """`lead`'s copy ingested in a transaction that fails before it commits (the engine's
    memory is folded again before the next event: who is in the channel, which a platform's
    lookup said and the ledger does not hold, is kept)."""
    async with engine.transaction():
        await engine.ingest(copy_for("lead"), "lead")
        raise RuntimeError("the commit failed")


async def told(store: CountingStore) -> dict[str, int]:
    """How many deliveries of the message each agent has waiting."""
    return {
        a: len([d for d in await store.pending(a) if d.decision.event_id == EVENT_ID])
        for a in AGENTS
    }


def test_copies_through_agents_already_decided_are_only_their_receipts() -> None:
    async def run() -> None:
        engine, store = await started(members=AGENTS)
        assert (await arrive(engine, "lead")).status == "new"
        copies = [await arrive(engine, a) for a in ("worker-1", "worker-2", "lead")]
        assert [(c.status, c.emissions) for c in copies] == [("repeat", [])] * 3
        assert store.decided_reads == 0  # nothing asked of the ledger
        assert sorted(await store.receipts(EVENT_ID)) == sorted(AGENTS)
        assert await told(store) == dict.fromkeys(AGENTS, 1)
        await store.close()

    asyncio.run(run())


def test_an_agent_that_could_not_see_the_event_at_first_is_decided_on_its_copy() -> None:
    async def run() -> None:
        engine, store = await started()  # no member known: only the receiver sees it
        await arrive(engine, "lead")
        assert await told(store) == {"lead": 1, "worker-1": 0, "worker-2": 0}
        copy = await arrive(engine, "worker-1")
        assert copy.status == "repeat" and [e.agent for e in copy.emissions] == ["worker-1"]
        again = await arrive(engine, "worker-1")  # decided on a copy: the ledger says so
        assert again.emissions == [] and store.decided_reads == 2
        assert await told(store) == {"lead": 1, "worker-1": 1, "worker-2": 0}
        await store.close()

    asyncio.run(run())


def test_a_first_arrival_rolled_back_leaves_its_next_copy_a_first_arrival() -> None:
    async def run() -> None:
        engine, store = await started(members=AGENTS)
        with pytest.raises(RuntimeError, match="the commit failed"):
            await rolled_back(engine)
        assert await told(store) == dict.fromkeys(AGENTS, 0)
        copy = await arrive(engine, "worker-1")
        assert copy.status == "new"
        assert await told(store) == dict.fromkeys(AGENTS, 1)
        await store.close()

    asyncio.run(run())


def test_the_memory_of_decided_events_is_bounded() -> None:
    copies = DecidedCopies(size=2)
    for n in range(3):
        copies.note(f"e{n}", ["lead"])
    assert not copies.covers("e0", ["lead"])  # forgotten: its copies take the full path
    assert copies.covers("e2", ["lead"]) and copies.covers("e2", [])
    assert not copies.covers("e2", ["lead", "worker-1"])
