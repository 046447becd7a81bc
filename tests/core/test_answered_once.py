"""A question is answered once, under whichever of its ids it is answered (`core.settling`): the
question itself, its reminder, its hand-over, its escalation to the lead."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from builders import (
    GENERAL_QUESTION,
    LEAD,
    W1,
    W2,
    reminded_in_general,
    slack_body,
    slack_join,
    slack_message,
    swept,
    took,
)

from core.agent_port import Outgoing
from core.clock import VirtualClock
from core.emission import Cancel, Emission
from core.engine import Engine
from core.engine_port import EnginePort
from core.errors import ToolError
from core.follow_up_records import follow_up_ids, question_of

QUESTION = GENERAL_QUESTION
DEADLINE = timedelta(minutes=5, seconds=1)


async def asked(text: str) -> tuple[Engine, VirtualClock]:
    """`text` said in #general, where the lead and both workers are."""
    said = slack_body(slack_message("1767225601.000100", text))
    return await took([*(slack_body(slack_join(u)) for u in (LEAD, W1, W2)), said])


async def answer(engine: Engine, agent: str, in_reply_to: str) -> bool:
    """`agent` answers `in_reply_to` in #general; whether its answer was queued."""
    said = Outgoing(
        conversation="C0GEN", text=f"{agent} answers {in_reply_to}", in_reply_to=in_reply_to
    )
    return (await EnginePort(engine, agent).send(said)).new


async def delivered(engine: Engine, agent: str, event_id: str) -> None:
    async with engine.store.transaction():
        await engine.store.mark_delivered(event_id, agent, 1)


async def escalated() -> tuple[Engine, VirtualClock]:
    """worker-1, asked the question, leaves it and its reminder unanswered: the lead is given
    it to answer."""
    engine, clock = await reminded_in_general()
    clock.advance(DEADLINE)
    told = [body["params"]["eventId"] for _, kind, body in await swept(engine) if kind == "rpc"]
    assert told == [f"{QUESTION}~escalated"]
    await delivered(engine, "lead", f"{QUESTION}~escalated")
    return engine, clock


def test_answering_the_question_after_its_reminder_answers_the_reminder_too() -> None:
    """The model answers the question by its own id once reminded of it: nothing is left to
    escalate."""

    async def run() -> None:
        engine, clock = await reminded_in_general()
        assert await answer(engine, "worker-1", QUESTION)
        assert engine.owed("worker-1") == []
        clock.advance(timedelta(hours=1))
        assert await swept(engine) == []
        await engine.store.close()

    asyncio.run(run())


@pytest.mark.parametrize("first", ["lead", "worker-1"])
def test_once_the_lead_is_given_a_question_the_first_answer_ends_the_others(first: str) -> None:
    """Escalated, the question is both worker-1's (late) and the lead's: whichever answers
    first, the other's answer is refused, and it owes nothing any more."""

    async def run() -> None:
        engine, clock = await escalated()
        ids = {"lead": f"{QUESTION}~escalated", "worker-1": f"{QUESTION}~reminder"}
        second = "worker-1" if first == "lead" else "lead"
        assert await answer(engine, first, ids[first])
        with pytest.raises(ToolError, match="answered by another agent"):
            await answer(engine, second, ids[second])
        if second == "worker-1":
            with pytest.raises(ToolError, match="answered by another agent"):
                await answer(engine, second, QUESTION)
        assert engine.owed(second) == []
        clock.advance(timedelta(hours=1))
        assert [kind for _, kind, _ in await swept(engine)] == []
        await engine.store.close()

    asyncio.run(run())


def test_the_harness_whose_obligation_an_answer_ended_is_told_to_drop_it() -> None:
    """The lead answers the question put to it: worker-1's harness, which may still be at
    work on the question or its reminder, is told that another agent took them."""

    async def run() -> None:
        engine, _ = await escalated()
        told: list[Emission] = []

        async def tell(emissions: list[Emission]) -> None:
            told.extend(emissions)

        said = Outgoing(conversation="C0GEN", text="Deployed.", in_reply_to=f"{QUESTION}~escalated")
        await EnginePort(engine, "lead", tell=tell).send(said)
        assert sorted(told, key=str) == [
            Cancel("worker-1", QUESTION, "claimed_by_other"),
            Cancel("worker-1", f"{QUESTION}~reminder", "claimed_by_other"),
        ]
        await engine.store.close()

    asyncio.run(run())


def test_a_question_handed_over_takes_its_first_responders_reminder_with_it() -> None:
    """The picked responder was reminded, then went down: the question goes to the other
    worker, and the first one's late answer to its reminder is refused."""

    async def run() -> None:
        engine, clock = await asked("<!subteam^S0BACK> who can look?")
        (first,) = [a for a in ("worker-1", "worker-2") if QUESTION in engine.owed(a)]
        await delivered(engine, first, QUESTION)
        clock.advance(DEADLINE)
        await swept(engine)
        await delivered(engine, first, f"{QUESTION}~reminder")
        engine.mark_unavailable(first)
        cancelled = [
            body["params"]["eventId"]
            for agent, kind, body in await swept(engine)
            if agent == first and body.get("method") == "notifications/cancelled"
        ]
        assert sorted(cancelled) == [QUESTION, f"{QUESTION}~reminder"]
        engine.mark_available(first)
        assert engine.owed(first) == []
        with pytest.raises(ToolError, match="refused"):
            await answer(engine, first, f"{QUESTION}~reminder")
        other = "worker-2" if first == "worker-1" else "worker-1"
        await delivered(engine, other, f"{QUESTION}~handover")
        assert await answer(engine, other, f"{QUESTION}~handover")
        await engine.store.close()

    asyncio.run(run())


def test_one_of_two_agents_named_answering_leaves_the_other_its_own_obligation() -> None:
    """Both workers are asked: worker-1 answers, worker-2 still owes its own answer and is
    reminded; left unanswered, it is escalated (a log line), but the lead is not given a
    question the person already has an answer to."""

    async def run() -> None:
        engine, clock = await asked(f"<@{W1}> <@{W2}> status?")
        for agent in ("worker-1", "worker-2"):
            await delivered(engine, agent, QUESTION)
        assert await answer(engine, "worker-1", QUESTION)
        assert engine.owed("worker-2") == [QUESTION]
        clock.advance(DEADLINE)
        ((agent, _, reminder),) = await swept(engine)
        assert (agent, reminder["params"]["eventId"]) == ("worker-2", f"{QUESTION}~reminder")
        await delivered(engine, "worker-2", f"{QUESTION}~reminder")
        clock.advance(DEADLINE)
        assert [(agent, kind) for agent, kind, _ in await swept(engine)] == [("lead", "escalation")]
        await engine.store.close()

    asyncio.run(run())


def test_every_id_a_question_stands_under_leads_back_to_it() -> None:
    ids = follow_up_ids("e")
    assert {"e~handover~reminder", "e~handover~2~reminder", "e~escalated~reminder"} < set(ids)
    assert {question_of(event_id) for event_id in ids} == {"e"}
