"""A role question whose picked responder goes down unanswered is handed to another candidate
that is up, once, and answered by it; with none up it waits, and its asker gets the notice."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import (
    LOCAL,
    W1,
    W2,
    local_workspace,
    slack_body,
    slack_delete,
    slack_edit,
    slack_join,
    slack_message,
)

from adapters.slack import normalise
from c2a.records import record_of
from core.agent_port import Outgoing
from core.clock import VirtualClock, parse_time
from core.decision import Decision, Directedness, Disposition, InjectionMode, Policy
from core.emission import Cancel
from core.engine import Engine
from core.engine_port import EnginePort
from core.errors import ToolError
from core.follow_up_records import (
    HANDED_OVER,
    MAX_HANDOVERS,
    follow_up_ids,
    follows_up,
    handover_id,
)
from core.manifest import Workspace
from core.sqlite_store import SQLiteStore

START = parse_time("2026-01-01T00:00:01Z")
HANDED = "~handover"
W3 = "U0W3"


async def seated(path: str) -> tuple[Engine, VirtualClock]:
    """Both workers in #general, on a ledger at `path`."""
    clock = VirtualClock(START)
    store = SQLiteStore(path)
    await store.open()
    engine = Engine(local_workspace(), store, clock)
    for user in (W1, W2):
        async with store.transaction():
            await engine.ingest(normalise(slack_body(slack_join(user))))
    return engine, clock


async def ask(engine: Engine, second: int) -> str:
    """`@backend` asks the room; returns the question's event id."""
    said = slack_message(f"17672256{second:02d}.000100", "<!subteam^S0BACK> who can look?")
    event = normalise(slack_body(said))
    assert event is not None
    async with engine.store.transaction():
        await engine.ingest(event)
    return event.event_id


async def sweep(engine: Engine) -> list[tuple[str, str, dict[str, Any]]]:
    async with engine.store.transaction():
        found = await engine.sweep()
    cancels = [("cancel", e.agent, {"eventId": e.event_id}) for e in found if isinstance(e, Cancel)]
    kept = [e for e in found if not isinstance(e, Cancel)]
    return [(e.kind, e.agent, e.body) for e in map(record_of, kept)] + cancels


async def dispositions(engine: Engine, event_id: str) -> dict[str, Disposition | None]:
    return {d.decision.agent: d.disposition for d in await engine.store.deliveries(event_id)}


def test_a_role_question_goes_to_the_other_worker_when_its_responder_goes_down(
    tmp_path: Path,
) -> None:
    async def run() -> None:
        ledger = str(tmp_path / "ledger.sqlite3")
        engine, clock = await seated(ledger)
        question = await ask(engine, 1)
        assert engine.owed("worker-1") == [question]
        await sweep(engine)  # nothing to hand over while worker-1 is up
        engine.mark_unavailable("worker-1")
        found = await sweep(engine)
        delivered = [body["params"] for kind, _, body in found if kind == "rpc"]
        reacted = [
            (agent, body["action"], body["signal"])
            for kind, agent, body in found
            if kind == "outbound"
        ]
        assert ("cancel", "worker-1", {"eventId": question}) in found
        (told,) = delivered
        assert told["eventId"] == question + HANDED and told["reminds"] == question
        assert told["attention"]["reason"] == "handed_over"
        assert told["attention"]["policy"] == "may_respond"
        assert told["attention"]["claimedBy"] == "agent:worker-2"
        assert told["content"] == [{"type": "text", "text": "<!subteam^S0BACK> who can look?"}]
        # No 🚧 in the sweep that hands it over: worker-1's 👀 goes, worker-2's comes.
        assert reacted == [("worker-1", "unreact", "seen"), ("worker-2", "react", "seen")]
        assert engine.state.claim_holder(question, clock.now()) == "worker-2"
        assert engine.owed("worker-1") == [] and engine.owed("worker-2") == [question + HANDED]
        assert await sweep(engine) == []  # once
        clock.advance(timedelta(minutes=3))
        assert await sweep(engine) == []  # no notice: the question is not waiting on worker-1

        # Folded again from the ledger (a restart), worker-2 still owes it.
        folded = Engine(engine.workspace, engine.store, clock)
        await folded.rebuild()
        assert folded.owed("worker-2") == [question + HANDED]
        assert folded.state.claim_holder(question, clock.now()) == "worker-2"

        # worker-1 is back with the question in its queue: its answer is refused.
        reply = Outgoing(conversation="C0GEN", text="I'll look", in_reply_to=question)
        with pytest.raises(ToolError, match="worker-2"):
            async with engine.store.transaction():
                await EnginePort(engine, "worker-1").send(reply)
        # worker-2's answer answers the question.
        handed = Outgoing(conversation="C0GEN", text="on it", in_reply_to=question + HANDED)
        async with engine.store.transaction():
            assert (await EnginePort(engine, "worker-2").send(handed)).new
        assert await dispositions(engine, question + HANDED) == {"worker-2": Disposition.RESPONDED}
        assert await dispositions(engine, question) == {
            "worker-1": Disposition.SUPERSEDED,
            "worker-2": Disposition.RESPONDED,
        }
        assert engine.owed("worker-2") == []
        await engine.store.close()

    asyncio.run(run())


def test_with_no_other_worker_up_the_question_waits_and_its_blocked_mark_goes_with_it(
    tmp_path: Path,
) -> None:
    async def run() -> None:
        engine, clock = await seated(str(tmp_path / "ledger.sqlite3"))
        engine.mark_unavailable("worker-1")
        engine.mark_unavailable("worker-2")
        question = await ask(engine, 1)  # both down: worker-1, first in order, gets 🚧
        assert await sweep(engine) == []  # nobody to hand it to
        engine.mark_available("worker-2")
        found = await sweep(engine)
        assert [(kind, agent, body.get("action")) for kind, agent, body in found] == [
            ("rpc", "worker-2", None),
            ("outbound", "worker-1", "unreact"),  # its 🚧 taken off: no longer its question
            ("outbound", "worker-2", "react"),
            ("cancel", "worker-1", None),
        ]
        assert found[1][2]["signal"] == "blocked"
        engine.mark_unavailable("worker-2")  # down too, and worker-1 still is: it waits
        ((kind, agent, blocked),) = await sweep(engine)
        assert (kind, agent, blocked["signal"]) == ("outbound", "worker-2", "blocked")
        clock.advance(timedelta(minutes=3))
        ((kind, agent, notice),) = await sweep(engine)
        assert (kind, agent, notice["inReplyTo"]) == ("outbound", "worker-2", question + HANDED)
        assert "not running" in notice["text"]
        await engine.store.close()

    asyncio.run(run())


def three_workers() -> Workspace:
    """The example team with a third backend worker, `worker-3` (Slack user U0W3)."""
    agents = yaml.safe_load(LOCAL.read_text())["agents"]
    slack = {**agents["worker-2"]["slack"], "user_id": W3}
    agents["worker-3"] = {**agents["worker-2"], "slack": slack}
    del agents["worker-3"]["discord"]
    return local_workspace(agents=agents)


def test_a_handed_over_question_whose_new_responder_goes_down_goes_on_to_one_that_is_up(
    tmp_path: Path,
) -> None:
    """worker-1 down: worker-2 takes it; worker-1 back and worker-2 down: it goes on to
    worker-3, never back to worker-1 (it went down with it once: that would bounce it between
    agents that are both down); worker-3's answer answers it, and worker-2's is refused."""

    async def run() -> None:
        clock = VirtualClock(START)
        store = SQLiteStore(str(tmp_path / "ledger.sqlite3"))
        await store.open()
        engine = Engine(three_workers(), store, clock)
        for user in (W1, W2, W3):
            async with store.transaction():
                await engine.ingest(normalise(slack_body(slack_join(user))))
        question = await ask(engine, 1)
        assert engine.owed("worker-1") == [question]
        engine.mark_unavailable("worker-1")
        await sweep(engine)
        assert engine.owed("worker-2") == [question + HANDED]
        engine.mark_available("worker-1")
        engine.mark_unavailable("worker-2")
        found = await sweep(engine)
        again = question + HANDED + "~2"
        assert ("cancel", "worker-2", {"eventId": question + HANDED}) in found
        (told,) = [body["params"] for kind, _, body in found if kind == "rpc"]
        assert (told["eventId"], told["reminds"]) == (again, question)
        assert told["attention"]["claimedBy"] == "agent:worker-3"
        reacted = [(a, b["action"], b["signal"]) for k, a, b in found if k == "outbound"]
        assert reacted == [("worker-2", "unreact", "seen"), ("worker-3", "react", "seen")]
        assert engine.owed("worker-2") == [] and engine.owed("worker-3") == [again]
        assert engine.state.claim_holder(question, clock.now()) == "worker-3"
        assert await sweep(engine) == []
        engine.mark_unavailable("worker-3")  # nobody left who has not had it: it waits
        ((kind, agent, blocked),) = await sweep(engine)
        assert (kind, agent, blocked["signal"]) == ("outbound", "worker-3", "blocked")
        engine.mark_available("worker-3")

        folded = Engine(engine.workspace, engine.store, clock)  # a restart
        await folded.rebuild()
        assert folded.owed("worker-3") == [again] and folded.owed("worker-2") == []

        late = Outgoing(conversation="C0GEN", text="on it", in_reply_to=question + HANDED)
        with pytest.raises(ToolError, match="worker-3"):
            async with engine.store.transaction():
                await EnginePort(engine, "worker-2").send(late)
        answer = Outgoing(conversation="C0GEN", text="on it", in_reply_to=again)
        async with engine.store.transaction():
            assert (await EnginePort(engine, "worker-3").send(answer)).new
        assert (await dispositions(engine, question))["worker-3"] is Disposition.RESPONDED
        assert engine.owed("worker-3") == []
        await engine.store.close()

    asyncio.run(run())


@pytest.mark.parametrize("change", ["deleted", "edited"])
def test_a_handed_over_question_deleted_or_edited_is_no_longer_owed_by_its_new_responder(
    tmp_path: Path, change: str
) -> None:
    # The follow-up has its own event id: a delete or an edit of the question must reach it,
    # or the new responder's turn would answer words that are gone.
    async def run() -> None:
        engine, _ = await seated(str(tmp_path / "ledger.sqlite3"))
        question = await ask(engine, 1)
        engine.mark_unavailable("worker-1")
        await sweep(engine)
        assert engine.owed("worker-2") == [question + HANDED]
        stamp, later = "1767225601.000100", "1767225605.000100"
        old = "<!subteam^S0BACK> who can look?"
        if change == "deleted":
            changed = slack_delete(stamp, later, old)
        else:
            changed = slack_edit(stamp, later, old, "<!subteam^S0BACK> who can look at CI?")
        async with engine.store.transaction():
            outcome = await engine.ingest(normalise(slack_body(changed)))
        cancels = [
            (e.agent, e.event_id, e.reason) for e in outcome.emissions if isinstance(e, Cancel)
        ]
        reason = "deleted" if change == "deleted" else "superseded"
        assert ("worker-2", question + HANDED, reason) in cancels
        handed = await dispositions(engine, question + HANDED)
        assert handed == {"worker-2": Disposition.SUPERSEDED}
        reply = await EnginePort(engine, "worker-2").final_reply([question + HANDED], "on it")
        assert reply is None  # a turn at work on it posts nothing
        owed = engine.owed("worker-2")
        assert question + HANDED not in owed
        assert len(owed) == (0 if change == "deleted" else 1)  # the new words, decided anew
        await engine.store.close()

    asyncio.run(run())


def test_every_hand_over_of_a_question_stands_for_it_and_is_reached_by_its_changes() -> None:
    handed = [handover_id("e", n) for n in range(1, MAX_HANDOVERS + 1)]
    assert handed[:2] == ["e~handover", "e~handover~2"]
    assert set(handed) < set(follow_up_ids("e"))  # an edit or a delete supersedes each
    for event_id in handed:
        decision = Decision(
            event_id,
            "worker-1",
            Directedness.TO_MY_ROLE,
            Policy.MAY_RESPOND,
            InjectionMode.BUFFERED,
            HANDED_OVER,
        )
        assert follows_up(decision) == "e"
