"""A start finishes what the process before it left cut short: the message shows it was cut,
the question is its agent's again, once, and the answer begun alike counts as the answer. A
question a built-in harness acknowledged and never answered is told again, unless it is old
enough for the follow-up's reminder."""

from __future__ import annotations

from datetime import timedelta

import pytest
from agent_world import DM, ROLE, port_scenario

from core.agent_port import Outgoing
from core.clock import VirtualClock
from core.decision import Disposition
from core.drafts import CUT_SHORT, WRITING
from core.engine import Engine
from core.engine_port import EnginePort
from core.restart import finish_cut_replies, tell_again
from core.sqlite_store import SQLiteStore


async def owed(store: SQLiteStore, event_id: str) -> tuple[str, Disposition | None]:
    [delivery] = [d for d in await store.deliveries(event_id) if d.decision.agent == "lead"]
    return delivery.status, delivery.disposition


def test_a_cut_reply_is_finished_as_cut_and_its_question_given_back_once() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        async with store.transaction():
            await store.mark_delivered(DM, "lead", 1)  # the harness took it
        begun = Outgoing(conversation="D0LEAD", text="Gre" + WRITING, in_reply_to=DM, writing=True)
        sent = await ports["lead"].send(begun)
        async with store.transaction():
            await store.outbox_mark(sent.key, "sent", "2026-01-01T00:00:11Z", {"messageId": "9.0"})
        assert await owed(store, DM) == ("delivered", Disposition.RESPONDED)

        async with store.transaction():
            assert await finish_cut_replies(engine) == 1
            assert await finish_cut_replies(engine) == 0  # finished: not found again
        finished = await store.outbox_get(f"{sent.key}:cut")
        assert finished is not None and finished.action["text"] == "Gre" + CUT_SHORT
        assert finished.action["messageId"] == "9.0"
        assert await owed(store, DM) == ("pending", Disposition.FAILED)
        assert await ports["lead"].owed([DM]) == [DM]

        again = await ports["lead"].send(begun)  # the new answer begins as the cut one did
        assert (again.key, again.new) == (sent.key, False)
        assert await owed(store, DM) == ("pending", Disposition.RESPONDED)

    port_scenario(test)


def test_a_whole_answer_that_ends_like_a_reply_being_written_is_left_answered() -> None:
    """The model's own answer ends with ` …`: before posts said whether they were being
    written, a start took it for a cut reply, marked it cut short and asked the question
    again, which the lead then answered a second time."""

    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        whole = Outgoing(
            conversation="D0LEAD", text="Let me look into it" + WRITING, in_reply_to=DM
        )
        sent = await ports["lead"].send(whole)
        async with store.transaction():
            await store.outbox_mark(sent.key, "sent", "2026-01-01T00:00:11Z", {"messageId": "9.0"})
            assert await finish_cut_replies(engine) == 0
        assert (await owed(store, DM))[1] is Disposition.RESPONDED
        assert await ports["lead"].owed([DM]) == []

    port_scenario(test)


@pytest.mark.parametrize(
    ("agents", "later_ms", "told"),
    [(["lead"], 0, 1), (["worker-1"], 0, 0), (["lead"], 1, 0)],
    ids=["built-in", "another-agents-harness", "past-the-deadline"],
)
def test_an_acknowledged_question_never_answered_is_told_again_within_its_deadline(
    agents: list[str], later_ms: int, told: int
) -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        async with store.transaction():
            await store.mark_delivered(DM, "lead", 1)  # the harness took it, then the stop
        deadline = engine.workspace.settings.deadline_ms
        clock = engine.clock
        assert isinstance(clock, VirtualClock)
        clock.advance(timedelta(milliseconds=deadline + later_ms - 1))
        async with store.transaction():
            assert await tell_again(engine, agents) == told
            assert await tell_again(engine, agents) == 0  # pending now, or never to be
        assert await owed(store, DM) == ("pending" if told else "delivered", None)

    port_scenario(test)


@pytest.mark.parametrize("later", [timedelta(minutes=1), timedelta(hours=1)])
def test_a_role_question_the_picked_agent_acknowledged_is_told_again_as_a_mention_is(
    later: timedelta,
) -> None:
    """Within the answer deadline, told again; past it, left to the follow-up's reminder."""

    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        assert engine.owed("worker-1") == [ROLE]  # the role's first worker was picked
        async with store.transaction():
            await store.mark_delivered(ROLE, "worker-1", 1)
        clock = engine.clock
        assert isinstance(clock, VirtualClock)
        clock.advance(later)
        within = later < timedelta(milliseconds=engine.workspace.settings.deadline_ms)
        async with store.transaction():
            assert await tell_again(engine, ["worker-2"]) == 0  # not its question
            assert await tell_again(engine, ["worker-1"]) == (1 if within else 0)
            assert await tell_again(engine, ["worker-1"]) == 0
        statuses = {d.decision.agent: d.status for d in await store.deliveries(ROLE)}
        assert statuses["worker-1"] == ("pending" if within else "delivered")

    port_scenario(test)
