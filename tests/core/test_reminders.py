"""An acknowledged must_respond event nobody answers gets one reminder, then goes to the lead."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import (
    GENERAL_QUESTION,
    LEAD,
    START,
    W1,
    W2,
    local_workspace,
    reminded_in_general,
    reminder_taken,
    slack_body,
    slack_delete,
    slack_join,
    slack_message,
    swept,
    took,
)

from adapters.slack import normalise
from c2a.records import record_of
from core.clock import VirtualClock, format_time
from core.decision import Disposition
from core.emission import Cancel
from core.engine import Engine
from core.mutes import record_mute
from core.notices import UNANSWERED
from core.restart import blocked_again
from core.sqlite_store import SQLiteStore
from harness_bridge.wire import parse_deliver


async def world(path: str = ":memory:") -> tuple[Engine, VirtualClock, str]:
    clock = VirtualClock(START)
    store = SQLiteStore(path)
    await store.open()
    engine = Engine(local_workspace(), store, clock)
    body = slack_body(
        slack_message(
            "1767225601.000100", "can you check the deploy?", channel="D0W1", channel_type="im"
        ),
        via="worker-1",
    )
    event = normalise(body)
    assert event is not None
    async with store.transaction():
        await engine.ingest(event)
        await store.mark_delivered(event.event_id, "worker-1", 1)
    return engine, clock, event.event_id


def test_an_unanswered_event_gets_one_reminder_then_one_escalation_to_the_lead() -> None:
    """worker-1's direct message, which the lead may not read: the escalation is logged, and
    the person who asked is told once that no answer came."""

    async def run() -> None:
        engine, clock, event_id = await world()
        assert await swept(engine) == []
        clock.advance(timedelta(minutes=5, seconds=1))
        ((agent, kind, message),) = await swept(engine)
        assert (agent, kind) == ("worker-1", "rpc")
        params = message["params"]
        assert params["eventId"] == f"{event_id}~reminder"
        assert params["reminds"] == event_id
        assert params["attention"]["reason"] == "reminder"
        assert params["reliability"]["idempotencyKey"] == f"{event_id}~reminder:worker-1"
        assert params["content"] == [{"type": "text", "text": "can you check the deploy?"}]
        assert parse_deliver(params).to_wire() == params
        assert await swept(engine) == []  # the original is not chased twice
        async with engine.store.transaction():
            await engine.store.mark_delivered(params["eventId"], "worker-1", 1)
        clock.advance(timedelta(minutes=5, seconds=1))
        escalation, (agent, kind, notice) = await swept(engine)
        assert escalation == (
            "lead",
            "escalation",
            {
                "reason": "unanswered",
                "conversation": "D0W1",
                "eventId": event_id,
                "responsible": "agent:worker-1",
            },
        )
        assert (agent, kind, notice["conversation"]) == ("worker-1", "outbound", "D0W1")
        assert (notice["text"], notice["inReplyTo"]) == (UNANSWERED, event_id)
        clock.advance(timedelta(minutes=10))
        assert await swept(engine) == []
        await engine.store.close()

    asyncio.run(run())


def test_a_question_its_agent_only_reacted_to_gets_no_notice_that_no_answer_came() -> None:
    """worker-1 put ✅ on the DM and said nothing: a reaction answers no `must_respond`
    question, so it is reminded and escalated, but the person, who saw the ✅, is not told
    that no answer came."""

    async def run() -> None:
        from core.engine_port import EnginePort
        from core.signals import Signal

        engine, clock, event_id = await world()
        await EnginePort(engine, "worker-1").react(event_id, Signal.DONE)
        await reminder_taken(engine, clock, "worker-1")
        clock.advance(timedelta(minutes=5, seconds=1))
        assert [kind for _, kind, _ in await swept(engine)] == ["escalation"]
        await engine.store.close()

    asyncio.run(run())


def test_an_answered_event_is_not_chased() -> None:
    async def run() -> None:
        engine, clock, event_id = await world()
        async with engine.store.transaction():
            await engine.dispose("worker-1", event_id, Disposition.DEFERRED, "after lunch")
        clock.advance(timedelta(hours=1))
        assert await swept(engine) == []
        await engine.store.close()

    asyncio.run(run())


def test_a_ledger_holding_reminders_rebuilds(tmp_path: Any) -> None:
    async def run() -> None:
        path = str(tmp_path / "ledger.sqlite3")
        engine, clock, _ = await world(path)
        clock.advance(timedelta(minutes=6))
        assert len(await swept(engine)) == 1
        assert await engine.rebuild() == 1
        await engine.store.close()

    asyncio.run(run())


def test_a_reminded_question_deleted_ends_its_reminder_too() -> None:
    # The reminder has its own event id: without this, the turn it started would still answer
    # a message that is gone.
    async def run() -> None:
        engine, clock, event_id = await world()
        clock.advance(timedelta(minutes=5, seconds=1))
        ((_, kind, _),) = await swept(engine)
        assert kind == "rpc"
        reminder = f"{event_id}~reminder"
        gone = slack_delete("1767225601.000100", "1767225900.000100", "x", channel="D0W1")
        async with engine.store.transaction():
            outcome = await engine.ingest(normalise(slack_body(gone, via="worker-1")))
        assert Cancel("worker-1", reminder, "deleted") in outcome.emissions
        (settled,) = await engine.store.deliveries(reminder)
        assert settled.disposition is Disposition.SUPERSEDED
        assert engine.owed("worker-1") == []
        await engine.store.close()

    asyncio.run(run())


async def blocked_then_notice(engine: Engine, clock: VirtualClock, event: Any, agent: str) -> None:
    """`event`, owed by `agent`, which is down: 🚧 at once, nothing more until two minutes have
    passed, then one notice in reply, and no second."""
    async with engine.store.transaction():
        outcome = await engine.ingest(event)
    records = [record_of(e) for e in outcome.emissions]
    signals = [(e.agent, e.body["signal"]) for e in records if e.kind == "outbound"]
    assert signals == [(agent, "blocked")]
    assert await swept(engine) == []
    clock.advance(timedelta(minutes=2))
    ((said_by, kind, action),) = await swept(engine)
    assert (said_by, kind, action["action"], action["inReplyTo"]) == (
        agent,
        "outbound",
        "send",
        event.event_id,
    )
    assert "not running" in action["text"] and action["mentions"] == []
    assert await swept(engine) == []  # one notice per event


def test_while_a_harness_is_down_a_must_respond_event_gets_blocked_then_a_notice() -> None:
    async def run() -> None:
        clock = VirtualClock(START)
        store = SQLiteStore()
        await store.open()
        engine = Engine(local_workspace(), store, clock)
        engine.mark_unavailable("worker-1")
        body = slack_body(
            slack_message("1767225601.000100", "are you there?", channel="D0W1", channel_type="im"),
            via="worker-1",
        )
        await blocked_then_notice(engine, clock, normalise(body), "worker-1")
        await store.close()

    asyncio.run(run())


async def workers_down(engine: Engine) -> None:
    """Both workers join the channel, and both are down."""
    for agent, user in (("worker-1", W1), ("worker-2", W2)):
        engine.mark_unavailable(agent)
        async with engine.store.transaction():
            await engine.ingest(normalise(slack_body(slack_join(user))))


def test_a_role_question_whose_responders_are_all_down_gets_blocked_then_a_notice() -> None:
    async def run() -> None:
        clock = VirtualClock(START)
        store = SQLiteStore()
        await store.open()
        engine = Engine(local_workspace(), store, clock)
        await workers_down(engine)
        body = slack_body(slack_message("1767225601.000100", "<!subteam^S0BACK> who can look?"))
        await blocked_then_notice(engine, clock, normalise(body), "worker-1")
        await store.close()

    asyncio.run(run())


@pytest.mark.parametrize("seen", [True, False], ids=["seen_signal", "no_seen_signal"])
def test_once_its_agent_is_back_a_blocked_mark_becomes_seen_once(seen: bool) -> None:
    """No 🚧 stays on a message the agent went on to answer: the next sweep after it is up
    again replaces it with 👀, taking 🚧 off, or only takes it off where the workspace shows no
    👀 (`seen_signal: false`); an agent still down keeps its marks."""

    async def run() -> None:
        store = SQLiteStore()
        await store.open()
        workspace = local_workspace(attention={"seen_signal": seen})
        engine = Engine(workspace, store, VirtualClock(START))
        for agent in ("worker-1", "worker-2"):
            engine.mark_unavailable(agent)
        for n, channel in enumerate(("D0W1", "D0W2"), start=1):
            said = slack_message(
                f"176722560{n}.000100", "there?", channel=channel, channel_type="im"
            )
            event = normalise(slack_body(said, via=f"worker-{n}"))
            assert event is not None
            async with store.transaction():
                await engine.ingest(event)
        assert await swept(engine) == []  # still down: nothing to lift
        engine.mark_available("worker-1")
        ((agent, kind, action),) = await swept(engine)
        assert (agent, kind, action["action"], action["signal"]) == (
            "worker-1",
            "outbound",
            "react" if seen else "unreact",
            "seen" if seen else "blocked",
        )
        if seen:
            assert action["placed"] == ["blocked"] and action["emoji"] == "eyes"
        assert action["idempotencyKey"].endswith(":react:seen:again")
        assert await swept(engine) == []  # once
        await store.close()

    asyncio.run(run())


@pytest.mark.parametrize("role", [False, True], ids=["dm", "role_question"])
def test_a_blocked_mark_left_by_a_stopped_host_becomes_seen_after_its_start(
    tmp_path: Path, role: bool
) -> None:
    """The host stopped while the workers were down: the next start finds the 🚧 still on the
    question worker-1 owes (a DM, or a role question it was picked for), not on one answered,
    and its first sweep makes it 👀."""

    async def run() -> None:
        ledger = str(tmp_path / "ledger.sqlite3")
        store = SQLiteStore(ledger)
        await store.open()
        engine = Engine(local_workspace(), store, VirtualClock(START))
        await workers_down(engine)
        ids = []
        for n in (1, 2):
            stamp = f"176722560{n}.000100"
            if role:
                said = slack_message(stamp, "<!subteam^S0BACK> there?")
            else:
                said = slack_message(stamp, "there?", channel="D0W1", channel_type="im")
            event = normalise(slack_body(said, via=None if role else "worker-1"))
            assert event is not None
            async with store.transaction():
                await engine.ingest(event)
            ids.append(event.event_id)
        assert ids[0] in engine.owed("worker-1")
        (answerer,) = [a for a in ("worker-1", "worker-2") if ids[1] in engine.owed(a)]
        async with store.transaction():
            answered = Disposition.RESPONDED
            await store.set_disposition(ids[1], answerer, answered, "answered", format_time(START))
        await store.close()

        store = SQLiteStore(ledger)  # the next start
        await store.open()
        engine = Engine(local_workspace(), store, VirtualClock(START))
        await engine.rebuild()
        async with store.transaction():
            assert await blocked_again(engine) == 1
        ((agent, _, action),) = await swept(engine)
        assert (agent, action["signal"], action["placed"]) == ("worker-1", "seen", ["blocked"])
        assert action["eventId"] == ids[0]
        async with store.transaction():
            assert await blocked_again(engine) == 0  # replaced: nothing left to find
        await store.close()

    asyncio.run(run())


def test_a_question_taken_before_its_agent_went_down_gets_the_notice_and_no_reminder() -> None:
    """worker-1's harness took the question, then its model stopped answering: its 👀 becomes
    🚧 at once, the person waiting is told once, and the agent is not reminded of what it
    cannot do; once it is back, 👀 again, and the question is chased as before."""

    async def run() -> None:
        engine, clock, event_id = await world()
        engine.mark_unavailable("worker-1")
        ((agent, kind, blocked),) = await swept(engine)
        assert (agent, kind, blocked["signal"], blocked["placed"]) == (
            "worker-1",
            "outbound",
            "blocked",
            ["seen"],
        )
        assert await swept(engine) == []  # once
        clock.advance(timedelta(minutes=2))
        ((agent, kind, action),) = await swept(engine)
        assert (agent, kind, action["inReplyTo"]) == ("worker-1", "outbound", event_id)
        assert "not running" in action["text"]
        clock.advance(timedelta(minutes=10))  # past the answer deadline
        assert await swept(engine) == []  # no second notice, and no reminder
        engine.mark_available("worker-1")
        (seen, (_, _, message)) = await swept(engine)
        assert (seen[2]["signal"], seen[2]["placed"]) == ("seen", ["blocked"])
        assert message["params"]["reminds"] == event_id
        await engine.store.close()

    asyncio.run(run())


def test_each_time_its_agent_is_down_again_the_question_shows_blocked_again(
    tmp_path: Path,
) -> None:
    """A model that fails, comes back, and fails again on the same question: 🚧, 👀, 🚧, each
    under a key of its own, and a start during the second outage finds that 🚧 to lift."""

    def marks(found: list[tuple[str, str, dict[str, Any]]]) -> list[tuple[str, str]]:
        return [(a["signal"], a["idempotencyKey"].rpartition(":react:")[2]) for _, _, a in found]

    async def run() -> None:
        ledger = str(tmp_path / "ledger.sqlite3")
        engine, _, event_id = await world(ledger)
        for _ in range(2):
            engine.mark_unavailable("worker-1")
            engine.mark_available("worker-1")  # back before the sweep: nothing to show
        assert await swept(engine) == []
        engine.mark_unavailable("worker-1")
        assert marks(await swept(engine)) == [("blocked", "blocked")]
        engine.mark_available("worker-1")
        assert marks(await swept(engine)) == [("seen", "seen:again")]
        engine.mark_unavailable("worker-1")
        ((_, _, again),) = await swept(engine)
        assert marks([("", "", again)]) == [("blocked", "blocked:2")]
        assert again["placed"] == ["seen"] and again["eventId"] == event_id
        assert await swept(engine) == []  # once this time too
        await engine.store.close()

        store = SQLiteStore(ledger)  # a start while it is still down
        await store.open()
        engine = Engine(local_workspace(), store, VirtualClock(START))
        await engine.rebuild()
        async with store.transaction():
            assert await blocked_again(engine) == 1
        assert marks(await swept(engine)) == [("seen", "seen:again:2")]  # up until told
        async with store.transaction():
            assert await blocked_again(engine) == 0
        await store.close()

    asyncio.run(run())


async def statuses_in_ops() -> tuple[Engine, VirtualClock]:
    """Two status broadcasts in #ops, which every agent gets as `digest`."""
    bodies = [slack_body(slack_join(u, channel="C0OPS")) for u in (LEAD, W1, W2)]
    for n, text in enumerate(["status: deploy started", "status: deploy finished"]):
        bodies.append(slack_body(slack_message(f"176722560{2 + n}.000100", text, channel="C0OPS")))
    return await took(bodies)


def test_a_digest_summarises_status_broadcasts_without_their_text() -> None:
    async def run() -> None:
        engine, clock = await statuses_in_ops()
        store = engine.store
        first = await swept(engine)
        digests = [(a, m["params"]) for a, kind, m in first if kind == "rpc"]
        assert [a for a, _ in digests] == ["lead", "worker-1", "worker-2"]
        params = digests[0][1]
        assert (params["injection"]["mode"], params["attention"]["policy"]) == (
            "digest",
            "must_not_respond",
        )
        text = params["content"][0]["text"]
        assert "2 messages from 1 author" in text and "a status update x2" in text
        assert "deploy" not in text
        assert parse_deliver(params).to_wire() == params
        assert await swept(engine) == []  # nothing new, and the period has not passed
        clock.advance(timedelta(minutes=16))
        assert await swept(engine) == []  # nothing new: a digest is no item of the next one
        await store.close()

    asyncio.run(run())


def test_a_muted_agent_gets_its_digest_once_its_mute_ends() -> None:
    async def run() -> None:
        engine, clock = await statuses_in_ops()
        until = clock.now() + timedelta(minutes=20)
        async with engine.transaction():
            await record_mute(
                engine.store, engine.state, "worker-1", clock.now(), until, muted=True
            )
        assert [agent for agent, _, _ in await swept(engine)] == ["lead", "worker-2"]
        clock.advance(timedelta(minutes=21))
        ((agent, _, message),) = await swept(engine)
        assert (agent, message["params"]["attention"]["reason"]) == ("worker-1", "digest")
        await engine.store.close()

    asyncio.run(run())


def test_a_reminder_reads_back_so_it_can_be_answered_or_fail() -> None:
    async def run() -> None:
        from core.engine_port import EnginePort
        from harness_bridge.backends.openai import TurnResult, record_failure
        from harness_bridge.tools import ChatTools

        engine, clock, event_id = await world()
        clock.advance(timedelta(minutes=5, seconds=1))
        ((_, _, message),) = await swept(engine)
        assert message["params"]["reminds"] == event_id
        reminder_id = message["params"]["eventId"]
        event = await engine.event(reminder_id)
        assert event is not None and event.conversation.id == "D0W1" and event.text == ""
        failed = TurnResult("slack:D0W1", "failed", (reminder_id,), (reminder_id,), "no model")
        assert await record_failure(EnginePort(engine, "worker-1"), failed) == [reminder_id]
        answer = {"target": {"conversation": "D0W1"}, "inReplyTo": reminder_id, "text": "Done."}
        result = await ChatTools(EnginePort(engine, "worker-1")).call("chat_send_message", answer)
        assert result["status"] == "queued"
        # Answering the reminder answers the question it reminds of.
        for delivered in (event_id, reminder_id):
            (delivery,) = await engine.store.deliveries(delivered)
            assert delivery.disposition is Disposition.RESPONDED, delivered
        await engine.store.close()

    asyncio.run(run())


def test_a_muted_agent_is_reminded_only_once_its_mute_ends() -> None:
    """`/c2a mute`: no new turns until then, a reminder's neither; the question still waits."""

    async def run() -> None:
        engine, clock, event_id = await world()
        until = clock.now() + timedelta(minutes=30)
        async with engine.transaction():
            await record_mute(
                engine.store, engine.state, "worker-1", clock.now(), until, muted=True
            )
        clock.advance(timedelta(minutes=10))
        assert await swept(engine) == []
        clock.advance(timedelta(minutes=21))
        ((agent, kind, message),) = await swept(engine)
        assert (agent, kind, message["params"]["eventId"]) == (
            "worker-1",
            "rpc",
            f"{event_id}~reminder",
        )
        await engine.store.close()

    asyncio.run(run())


def test_a_digest_folded_again_keeps_its_period() -> None:
    """Where several processes share the ledger, each folds the records appended since its
    last event, its own digests among them: the next digest still waits for its period."""

    async def run() -> None:
        engine, clock = await statuses_in_ops()
        assert len(await swept(engine)) == 3  # a digest each
        async with engine.transaction():
            await engine.catch_up()
        clock.advance(timedelta(minutes=1))
        body = slack_body(slack_message("1767225700.000100", "status: all green", channel="C0OPS"))
        async with engine.transaction():
            await engine.ingest(normalise(body))
        assert await swept(engine) == []  # the period has not passed
        clock.advance(timedelta(minutes=15))
        assert len(await swept(engine)) == 3
        await engine.store.close()

    asyncio.run(run())


def test_a_question_left_unanswered_after_its_reminder_goes_to_the_lead_to_answer() -> None:
    """worker-1 is asked in #general, where the lead is too, and answers neither the question
    nor its reminder: the lead is given it to answer, and its answer answers the question."""

    async def run() -> None:
        from core.engine_port import EnginePort
        from harness_bridge.tools import ChatTools

        engine, clock = await reminded_in_general()
        store, question = engine.store, GENERAL_QUESTION
        clock.advance(timedelta(minutes=5, seconds=1))
        escalation, (agent, kind, told) = await swept(engine)
        assert escalation[:2] == ("lead", "escalation")
        params = told["params"]
        assert (agent, kind, params["eventId"], params["reminds"]) == (
            "lead",
            "rpc",
            f"{question}~escalated",
            question,
        )
        attention = params["attention"]
        assert (attention["policy"], attention["reason"]) == ("must_respond", "escalated")
        assert params["content"] == [{"type": "text", "text": f"<@{W1}> deploy done?"}]
        answer = {
            "target": {"conversation": "C0GEN"},
            "inReplyTo": params["eventId"],
            "text": "It is: deployed at 10:02.",
        }
        result = await ChatTools(EnginePort(engine, "lead")).call("chat_send_message", answer)
        assert result["status"] == "queued"
        (mine,) = [d for d in await store.deliveries(question) if d.decision.agent == "lead"]
        assert mine.disposition is Disposition.RESPONDED  # its own copy of the question
        await store.close()

    asyncio.run(run())


@pytest.mark.parametrize("handed_over", [False, True], ids=["picked", "handed_over"])
def test_a_role_question_its_picked_responder_leaves_unanswered_is_chased_too(
    handed_over: bool,
) -> None:
    """A role question goes to one worker (the other is told `claimed_by_other`): when that
    worker says nothing, it is reminded at the deadline, then the question goes to the lead to
    answer, as a mention would. Handed over to the other worker (the first went down), it is
    chased as the new responder's, and the lead is given the question itself."""

    async def run() -> None:
        from core.engine_port import EnginePort
        from harness_bridge.tools import ChatTools

        asked = slack_body(slack_message("1767225601.000100", "<!subteam^S0BACK> who can look?"))
        engine, clock = await took([*(slack_body(slack_join(u)) for u in (LEAD, W1, W2)), asked])
        store = engine.store
        question = "slack:T0LOCAL:C0GEN:1767225601.000100"
        (picked,) = [a for a in ("worker-1", "worker-2") if question in engine.owed(a)]
        chased = question
        if handed_over:
            engine.mark_unavailable(picked)
            found = await swept(engine)
            (handover,) = [b for _, _, b in found if b.get("method") == "chat/deliver"]
            chased = handover["params"]["eventId"]
            assert chased == f"{question}~handover"
            picked = "worker-2" if picked == "worker-1" else "worker-1"
        async with store.transaction():
            await store.mark_delivered(chased, picked, 1)
        clock.advance(timedelta(minutes=5, seconds=1))
        (reminder,) = [(a, b) for a, kind, b in await swept(engine) if kind == "rpc"]
        assert reminder[0] == picked
        assert reminder[1]["params"]["eventId"] == f"{chased}~reminder"
        assert reminder[1]["params"]["attention"]["policy"] == "must_respond"
        async with store.transaction():
            await store.mark_delivered(f"{chased}~reminder", picked, 1)
        clock.advance(timedelta(minutes=5, seconds=1))
        followed = [(a, kind, b) for a, kind, b in await swept(engine) if kind != "outbound"]
        escalation, (lead, _, told) = followed
        assert escalation == (
            "lead",
            "escalation",
            {
                "reason": "unanswered",
                "conversation": "C0GEN",
                "eventId": question,
                "responsible": f"agent:{picked}",
            },
        )
        assert (lead, told["params"]["eventId"]) == ("lead", f"{question}~escalated")
        answer = {
            "target": {"conversation": "C0GEN"},
            "inReplyTo": f"{question}~escalated",
            "text": "I will look: give me ten minutes.",
        }
        result = await ChatTools(EnginePort(engine, "lead")).call("chat_send_message", answer)
        assert result["status"] == "queued"
        clock.advance(timedelta(hours=1))
        assert [kind for _, kind, _ in await swept(engine) if kind != "outbound"] == []
        await store.close()

    asyncio.run(run())


def test_a_question_the_lead_leaves_unanswered_too_gets_a_notice_from_it() -> None:
    """worker-1 left it, then the lead, given it, left it and its reminder: the lead tells the
    person once that no answer came."""

    async def run() -> None:
        engine, clock = await reminded_in_general()
        question, escalated = GENERAL_QUESTION, f"{GENERAL_QUESTION}~escalated"
        clock.advance(timedelta(minutes=5, seconds=1))
        await swept(engine)
        async with engine.store.transaction():
            await engine.store.mark_delivered(escalated, "lead", 1)
        await reminder_taken(engine, clock, "lead")
        clock.advance(timedelta(minutes=5, seconds=1))
        ((agent, kind, notice),) = await swept(engine)
        assert (agent, kind, notice["text"]) == ("lead", "outbound", UNANSWERED)
        assert (notice["conversation"], notice["inReplyTo"]) == ("C0GEN", question)
        clock.advance(timedelta(hours=1))
        assert await swept(engine) == []
        await engine.store.close()

    asyncio.run(run())


@pytest.mark.parametrize("away", ["muted", "down"])
def test_a_question_escalated_while_the_lead_is_away_is_put_to_it_once_back(away: str) -> None:
    """The escalation is logged at once; the question waits for the lead's mute to end, or
    its harness to be back, and is then put to it once."""

    async def run() -> None:
        engine, clock = await reminded_in_general()
        store, question = engine.store, GENERAL_QUESTION
        if away == "muted":
            until = clock.now() + timedelta(minutes=30)
            async with engine.transaction():
                await record_mute(store, engine.state, "lead", clock.now(), until, muted=True)
        else:
            engine.mark_unavailable("lead")
        clock.advance(timedelta(minutes=5, seconds=1))
        assert [kind for _, kind, _ in await swept(engine)] == ["escalation"]
        clock.advance(timedelta(minutes=10))
        assert await swept(engine) == []  # still away
        if away == "muted":
            clock.advance(timedelta(minutes=16))
        else:
            engine.mark_available("lead")
        ((agent, kind, told),) = await swept(engine)
        assert (agent, kind, told["params"]["eventId"]) == ("lead", "rpc", f"{question}~escalated")
        assert await swept(engine) == []  # once
        await store.close()

    asyncio.run(run())


def test_a_role_question_its_picked_responder_answered_is_not_chased() -> None:
    async def run() -> None:
        asked = slack_body(slack_message("1767225601.000100", "<!subteam^S0BACK> who can look?"))
        engine, clock = await took([*(slack_body(slack_join(u)) for u in (LEAD, W1, W2)), asked])
        question = "slack:T0LOCAL:C0GEN:1767225601.000100"
        (picked,) = [a for a in ("worker-1", "worker-2") if question in engine.owed(a)]
        async with engine.store.transaction():
            await engine.store.mark_delivered(question, picked, 1)
            await engine.dispose(picked, question, Disposition.RESPONDED, "answered")
        clock.advance(timedelta(hours=1))
        assert await swept(engine) == []
        await engine.store.close()

    asyncio.run(run())
