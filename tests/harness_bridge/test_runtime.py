"""The built-in harness end to end: a DM is delivered, gathered into a turn, and the scripted
model answers it once through the chat tools."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from builders import ingest_slack, slack_body, slack_message
from fakes.openai_server import FakeOpenAI, call, completion
from world import BASE, DM, THANKS, scenario

from adapters.slack import normalise
from core.clock import SystemClock
from core.drafts import TURN_FAILED
from core.emission import Cancel
from core.engine import Engine
from core.sqlite_store import SQLiteStore
from harness_bridge import runtime
from harness_bridge.backends.openai import OpenAIModelLoop, TurnResult, session_of
from harness_bridge.delivery import Deliverer
from harness_bridge.runtime import InProcessHarness
from harness_bridge.tools import ChatTools
from harness_bridge.turns import Turn


async def disposition(store: SQLiteStore, event_id: str, agent: str) -> str | None:
    for d in await store.deliveries(event_id):
        if d.decision.agent == agent:
            return d.disposition.value if d.disposition else None
    return None


def lead_harness(engine: Engine, tools: dict[str, ChatTools], loop: Any) -> InProcessHarness:
    """The lead's in-process harness on `loop`, turns gathered for 50 ms."""
    return InProcessHarness(tools["lead"].port, engine.deliveries, loop, SystemClock(), quiet_ms=50)


async def until_idle(harness: InProcessHarness) -> int:
    """Start `harness`, deliver what waits, run until nothing is left, stop; returns how many
    deliveries were made."""
    async with running(harness) as deliverer:
        delivered = await deliverer.resume()
        async with asyncio.timeout(10):
            await harness.idle()
    return delivered


@asynccontextmanager
async def running(harness: InProcessHarness) -> AsyncIterator[Deliverer]:
    """`harness` started, as its deliverer, and stopped when the block ends."""
    deliverer = await harness.start()
    try:
        yield deliverer
    finally:
        await harness.stop()


def test_a_dm_becomes_one_turn_and_one_reply() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        reply = {"target": {"conversation": "D0LEAD"}, "inReplyTo": DM, "text": "It is green."}
        # The thanks is a knock (a turn at once); the DM gathers for 50 ms, then its turn.
        script = [
            completion("Nothing to do for a thank-you."),
            completion(calls=[call("chat_send_message", reply)]),
            completion("done"),
        ]
        async with (
            FakeOpenAI(script) as server,
            OpenAIModelLoop(server.base_url, "fake-model", tools["lead"]) as loop,
        ):
            harness = lead_harness(engine, tools, loop)
            assert await until_idle(harness) >= 2
        sends = store.db.execute(
            "SELECT json_extract(action, '$.inReplyTo') FROM outbox "
            "WHERE json_extract(action, '$.action') = 'send'"
        ).fetchall()
        assert sends == [(DM,)]
        knock, turn = server.requests[0]["messages"], server.requests[1]["messages"]
        assert knock[0]["role"] == "system" and "C2A RESPONSE RULES" in knock[0]["content"]
        assert THANKS in knock[1]["content"] and "KNOCK" in knock[1]["content"]
        assert DM in turn[-1]["content"]
        assert [r.status for r in harness.results] == ["completed", "completed"]

    scenario(test)


class Recording:
    """A model loop that records what it is given and says a turn runs in every session."""

    def __init__(self) -> None:
        self.injected: list[str] = []
        self.turns: list[list[str]] = []

    async def run(self, turn: Turn) -> TurnResult:
        self.turns.append(turn.event_ids)
        return TurnResult(session_of(turn.events[0]), "completed", tuple(turn.event_ids))

    def inject(self, params: dict[str, Any]) -> bool:
        self.injected.append(params["eventId"])
        return True


class Failing:
    """A model loop whose every turn fails, as one still calling tools after its last round."""

    async def run(self, turn: Turn) -> TurnResult:
        ids = tuple(turn.event_ids)
        reason = "the model was still calling tools after 8 rounds"
        return TurnResult(session_of(turn.events[0]), "failed", ids, ids, reason)

    def inject(self, params: dict[str, Any]) -> bool:
        return False


class Crashing(Failing):
    """A model loop that raises what nothing foresaw (a bug, an input no rule caught)."""

    async def run(self, turn: Turn) -> TurnResult:
        raise RuntimeError("something no rule foresaw")


@pytest.mark.parametrize("loop", [Failing(), Crashing()], ids=["failed", "crashed"])
def test_a_failed_turn_that_owed_an_answer_says_so_where_it_was_asked(loop: Failing) -> None:
    """The DM is owed an answer: its turn failing (or crashing) records `failed` and tells the
    asker (a post in the DM answering nothing); the thanks owed none, and its failing posts
    nothing."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        assert await until_idle(lead_harness(engine, tools, loop)) >= 2
        sends = store.db.execute(
            "SELECT json_extract(action, '$.conversation'), json_extract(action, '$.inReplyTo'), "
            "json_extract(action, '$.text') FROM outbox "
            "WHERE json_extract(action, '$.action') = 'send'"
        ).fetchall()
        assert sends == [("D0LEAD", None, TURN_FAILED)]
        assert await disposition(store, DM, "lead") == "failed"

    scenario(test)


def test_only_events_that_start_a_turn_are_injected_into_a_running_one() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        loop = Recording()
        harness = lead_harness(engine, tools, loop)
        async with running(harness) as deliverer:
            assert (
                await deliverer.resume() == 7
            )  # three joins, the DM, a role mention, chatter, thanks
        # The role mention is someone else's and chatter is nobody's (tool_mailbox): they wait
        # in the mailbox, never reaching the model in the middle of a turn.
        assert loop.injected == [DM, THANKS]

    scenario(test)


class Separate(Recording):
    """`Recording`, whose every event is a turn of its own."""

    def inject(self, params: dict[str, Any]) -> bool:
        return False


def test_a_long_running_harness_counts_every_turn_and_keeps_only_the_latest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """/metrics reads `outcomes`, which counts every turn; `results` holds the last few, so a
    host that runs for months does not keep every answer it ever gave."""
    monkeypatch.setattr(runtime, "RESULTS_KEPT", 1)

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        loop = Separate()
        harness = lead_harness(engine, tools, loop)
        async with running(harness) as deliverer:
            await deliverer.resume()
            async with asyncio.timeout(10):
                await harness.idle()
            assert harness.running == 0
        assert loop.turns == [[THANKS], [DM]]
        assert harness.outcomes == {"completed": 2}
        assert [r.event_ids for r in harness.results] == [(DM,)]
        assert harness._sessions == {}  # no lock kept for a conversation with no turn

    scenario(test)


def test_a_plain_text_answer_is_the_reply_and_a_turn_owing_none_posts_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        texts = ["It is green.", "You're welcome!"]
        script = [completion(texts[0]), completion(texts[1])]
        async with (
            FakeOpenAI(script) as server,
            OpenAIModelLoop(server.base_url, "fake-model", tools["lead"]) as loop,
        ):
            await until_idle(lead_harness(engine, tools, loop))
        answered = [DM in r["messages"][-1]["content"] for r in server.requests]
        dm_text = texts[answered.index(True)]
        sends = store.db.execute(
            "SELECT json_extract(action, '$.inReplyTo'), json_extract(action, '$.text') "
            "FROM outbox WHERE json_extract(action, '$.action') = 'send'"
        ).fetchall()
        assert sends == [(DM, dm_text)]  # the thanks (ack_only) owed no reply
        assert await disposition(store, DM, "lead") == "responded"
        assert "owed no reply" in caplog.text

    with caplog.at_level(logging.INFO, logger="harness_bridge.runtime"):
        scenario(test)


class Hanging(Recording):
    """A model loop whose turns run until they are cancelled, noting those that were."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: asyncio.Queue[list[str]] = asyncio.Queue()  # each turn's events, as it starts
        self.stopped: list[list[str]] = []

    async def run(self, turn: Turn) -> TurnResult:
        self.turns.append(turn.event_ids)
        self.runs.put_nowait(turn.event_ids)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.stopped.append(turn.event_ids)
            raise
        raise AssertionError("a hanging turn ends only when cancelled")

    def inject(self, params: dict[str, Any]) -> bool:
        return False


class Watched(InProcessHarness):
    """The built-in harness, noting after each cancellation it is told of whether a turn was
    stopped by it, and setting `told`."""

    stopping: list[bool]
    told: asyncio.Event

    async def _cancelled(self, params: dict[str, Any] | None) -> None:
        await super()._cancelled(params)
        self.stopping.append(any(task.cancelling() for task in self._turns))
        self.told.set()


@pytest.mark.parametrize(("reason", "stops"), [("deleted", True), ("superseded", False)])
def test_a_turn_whose_question_is_deleted_is_stopped_and_an_edit_does_not_stop_one(
    reason: str, stops: bool
) -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        loop = Hanging()
        harness = Watched(tools["lead"].port, engine.deliveries, loop, SystemClock(), quiet_ms=50)
        harness.stopping, harness.told = [], asyncio.Event()
        # Stopping it ends it, whatever runs (it did not on Python 3.11 before).
        async with running(harness) as deliverer:
            await deliverer.resume()
            assert await loop.runs.get() == [THANKS]  # a knock starts at once; the DM waits
            await deliverer.tell(Cancel("lead", THANKS, reason))
            await harness.told.wait()
            assert harness.stopping == [stops]

    scenario(test)


def test_told_to_stop_the_turn_at_work_in_that_conversation_stops_and_the_stop_is_its_own(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        loop = Hanging()
        harness = lead_harness(engine, tools, loop)
        async with running(harness) as deliverer:
            await deliverer.resume()
            assert await loop.runs.get() == [THANKS]  # owes nothing: no cancellation stops it
            stop = slack_message(f"{BASE + 5}.000100", "stop", channel="D0LEAD", channel_type="im")
            event = normalise(slack_body(stop, via="lead"))
            assert event is not None
            await engine.ingest(event)
            await deliverer.resume()
            # The DM waiting behind it was dropped (`Engine.end_work`): the stop runs next.
            assert await loop.runs.get() == [event.event_id]
            assert loop.stopped == [[THANKS]]
        assert "told to stop" in caplog.text

    with caplog.at_level(logging.INFO, logger="harness_bridge.runtime"):
        scenario(test)


class Held(Recording):
    """A model loop whose turn holding `held` runs until `release`; an event is injected into
    a turn running in its session."""

    def __init__(self, held: str) -> None:
        super().__init__()
        self.held, self.release, self.sessions = held, asyncio.Event(), set[str]()
        self.started = asyncio.Event()

    async def run(self, turn: Turn) -> TurnResult:
        session = session_of(turn.events[0])
        self.turns.append(turn.event_ids)
        if self.held in turn.event_ids:
            self.sessions.add(session)
            self.started.set()
            await self.release.wait()
            self.sessions.discard(session)
        return TurnResult(session, "completed", tuple(turn.event_ids))

    def inject(self, params: dict[str, Any]) -> bool:
        if session_of(params) not in self.sessions:
            return False
        self.injected.append(params["eventId"])
        return True


def test_a_persons_next_fragment_joins_their_gathering_not_anothers_running_turn() -> None:
    """Ana's message is still gathering when Ben's question starts a turn in the channel: her
    next line belongs with her first, not in Ben's turn (where the model would read its
    second half first)."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        ana, ben, more = (f"slack:T0LOCAL:C0GEN:{BASE + n}.000100" for n in (11, 12, 13))
        loop = Held(ben)
        harness = InProcessHarness(
            tools["lead"].port, engine.deliveries, loop, SystemClock(), quiet_ms=2000
        )
        said = [
            (11, "U0ALICE", "<@U0LEAD> so about the deploy"),
            (12, "U0BOB", "<@U0LEAD> is the build green?"),
            (13, "U0ALICE", "and the migration, is it done?"),
        ]
        async with running(harness) as deliverer:
            for n, user, text in said:
                await ingest_slack(
                    engine, [slack_body(slack_message(f"{BASE + n}.000100", text, user=user))]
                )
                await deliverer.resume()
                if n == 12:
                    await loop.started.wait()  # Ben's turn runs
            loop.release.set()
            async with asyncio.timeout(10):
                await harness.idle()
        assert more not in loop.injected
        assert [ana, more] in loop.turns and [ben] in loop.turns

    scenario(test)
