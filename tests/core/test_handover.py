"""A role question whose picked responder goes down unanswered is handed to another candidate
that is up, once, and answered by it; with none up it waits, and its asker gets the notice."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import (
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
from core.decision import Disposition
from core.emission import Cancel
from core.engine import Engine
from core.engine_port import EnginePort
from core.errors import ToolError
from core.sqlite_store import SQLiteStore

START = parse_time("2026-01-01T00:00:01Z")
HANDED = "~handover"


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
        engine.mark_unavailable("worker-2")  # down too: handed over once, it waits for worker-2
        ((kind, agent, blocked),) = await sweep(engine)
        assert (kind, agent, blocked["signal"]) == ("outbound", "worker-2", "blocked")
        engine.mark_available("worker-1")
        assert await sweep(engine) == []  # nothing of worker-1's to lift: not its question
        clock.advance(timedelta(minutes=3))
        ((kind, agent, notice),) = await sweep(engine)
        assert (kind, agent, notice["inReplyTo"]) == ("outbound", "worker-2", question + HANDED)
        assert "not running" in notice["text"]
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
