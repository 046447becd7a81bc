"""`/c2a` answered on the engine: status, why, claims and help for anyone; mute, unmute and
leave for the agent's approvers only; a muted agent gets no turn until its mute ends (on a
virtual clock) or it is unmuted, across a restart; leave ends and cancels the current turn;
every command is audited."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from builders import HUMAN, HUMAN2, LEAD, W1, W2, local_workspace, slack_body, slack_join
from builders import slack_message as message

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.command_answers import Commands
from core.command_text import AgentLine, muted_text, status_text
from core.decision import Decision, Disposition, Policy
from core.emission import Cancel, Delivery, Emission
from core.engine import Engine
from core.sqlite_store import SQLiteStore

AT = parse_time("2026-01-01T00:00:00Z")
APPROVER = HUMAN


def locate(link: str) -> tuple[str, str] | None:
    """A link as these tests write them: `link:<channel>:<ts>`."""
    word, _, rest = link.partition(":")
    channel, _, ts = rest.partition(":")
    return (channel, ts) if word == "link" and ts else None


class World:
    def __init__(self, engine: Engine, store: SQLiteStore) -> None:
        self.engine, self.store, self.told = engine, store, list[Emission]()
        self.commands = Commands(engine, self.sink)
        self.clock = engine.clock
        assert isinstance(self.clock, VirtualClock)

    async def sink(self, emissions: list[Emission]) -> None:
        self.told.extend(emissions)

    async def say(self, ts: str, text: str, user: str = HUMAN) -> dict[str, Decision]:
        event = normalise(slack_body(message(ts, text, user=user)))
        assert event is not None
        async with self.store.transaction():
            outcome = await self.engine.ingest(event)
        return {e.agent: e.decision for e in outcome.emissions if isinstance(e, Delivery)}

    async def run(self, text: str, user: str = HUMAN2, *groups: str) -> str:
        return await self.commands.answer("slack", user, groups, text, locate=locate)

    def reactions(self, agent: str) -> list[str]:
        """The signals the agent's outbox holds, oldest first."""
        rows = self.store.db.execute(
            "SELECT json_extract(action, '$.signal') FROM outbox WHERE agent = ? "
            "AND json_extract(action, '$.action') = 'react' ORDER BY rowid",
            (agent,),
        )
        return [signal for (signal,) in rows]

    def audited(self) -> list[tuple[str, str, dict[str, str]]]:
        rows = self.store.db.execute(
            "SELECT agent, what, outcome, detail FROM audit ORDER BY rowid"
        )
        return [(a, o, json.loads(d)) for a, w, o, d in rows if w == "command"]


@asynccontextmanager
async def world(tmp_path: Path) -> AsyncIterator[World]:
    store = SQLiteStore(str(tmp_path / "ledger.sqlite3"))
    await store.open()
    try:
        engine = Engine(local_workspace(), store, VirtualClock(AT))
        engine.approvals.approvers["worker-1"] = (APPROVER, "group:S0OPS")
        async with store.transaction():
            for user in (LEAD, W1, W2):
                event = normalise(slack_body(slack_join(user)))
                assert event is not None
                await engine.ingest(event)
        yield World(engine, store)
    finally:
        await store.close()


def scenario(tmp_path: Path, test: Callable[[World], Awaitable[None]]) -> None:
    async def run() -> None:
        async with world(tmp_path) as w:
            await test(w)

    asyncio.run(run())


def test_status_shows_each_agent_s_open_work_and_queue(tmp_path: Path) -> None:
    async def test(w: World) -> None:
        await w.say("1767225600.000100", f"<@{W1}> can you look at the deploy?")
        text = await w.run("status")
        lines = text.splitlines()
        queued = {a: len(await w.store.pending(a)) for a in ("lead", "worker-1", "worker-2")}
        assert queued["worker-1"] > 0
        # The example team's agents have no harness: the status says so.
        assert lines[0] == f"*lead*: 0 open, {queued['lead']} queued, no harness"
        assert lines[1] == f"*worker-1*: 1 open, {queued['worker-1']} queued, no harness"
        assert lines[2] == f"  • in C0GEN: <@{W1}> can you look at the deploy?"
        assert lines[3] == f"*worker-2*: 0 open, {queued['worker-2']} queued, no harness"
        assert w.audited() == [
            ("", "answered", {"platform": "slack", "user": HUMAN2, "text": "status"})
        ]

    scenario(tmp_path, test)


def test_status_tells_a_harness_that_is_down_from_none_at_all() -> None:
    down = AgentLine("lead", [], 0, unavailable=True)
    none = AgentLine("worker-1", [], 2, unavailable=True, harness=False)
    assert status_text([down, none], bold="") == (
        "lead: 0 open, 0 queued, harness down\nworker-1: 0 open, 2 queued, no harness"
    )


def test_why_gives_each_agent_s_decision_and_reason_for_a_linked_message(tmp_path: Path) -> None:
    async def test(w: World) -> None:
        await w.say("1767225600.000100", f"<@{W1}> can you look?")
        text = await w.run("why link:C0GEN:1767225600.000100")
        assert text.splitlines()[0] == f"Message: <@{W1}> can you look?"
        assert "*worker-1*: must_respond (`direct_mention`), buffered, pending" in text
        assert "*lead*: must_not_respond (" in text
        assert await w.run("why nowhere") == "'nowhere' is not a link to a message here."
        unknown = await w.run("why link:C0GEN:1767225999.000100")
        assert unknown.startswith("The ledger has no message at that link")

    scenario(tmp_path, test)


def test_a_direct_message_s_words_and_decisions_are_shown_to_its_author_alone(
    tmp_path: Path,
) -> None:
    async def test(w: World) -> None:
        ts = "1767225600.000100"
        dm = message(ts, "my server is 10.1.2.3, can you check it?", channel="D0LEAD")
        dm["channel_type"] = "im"
        event = normalise(slack_body(dm, via="lead"))
        assert event is not None
        async with w.store.transaction():
            await w.engine.ingest(event, "lead")
        link = f"why link:D0LEAD:{ts}"
        assert (
            await w.run(link) == "That message is in a direct message: only its author can ask why."
        )
        assert (await w.run(link, HUMAN)).startswith("Message: my server is 10.1.2.3")
        elsewhere = await w.run("status")
        assert "10.1.2.3" not in elsewhere
        assert "  • in a direct message: (its words are for its author)" in elsewhere
        assert "• in D0LEAD: my server is 10.1.2.3" in await w.run("status", HUMAN)
        async with w.store.transaction():
            await w.engine.claim("lead", event.event_id)
        assert "10.1.2.3" not in await w.run("claims")
        assert "10.1.2.3" in await w.run("claims", HUMAN)

    scenario(tmp_path, test)


def test_claims_lists_who_holds_what_until_when(tmp_path: Path) -> None:
    async def test(w: World) -> None:
        assert await w.run("claims") == "No open claims."
        await w.say("1767225600.000100", "deploy is red")
        event_id = next(iter(w.engine.state.messages.values())).event_id
        await w.engine.claim("worker-2", event_id)
        text = await w.run("claims")
        assert text.startswith("*worker-2* holds deploy is red until 2026-01-01T00:")
        w.clock.advance(timedelta(hours=2))
        assert await w.run("claims") == "No open claims."

    scenario(tmp_path, test)


def test_help_and_an_unreadable_command_show_the_commands(tmp_path: Path) -> None:
    async def test(w: World) -> None:
        assert (await w.run("help")).startswith("`/c2a status`")
        unreadable = await w.run("dance")
        assert unreadable.startswith("No command 'dance'.\n`/c2a status`")
        assert [o for _, o, _ in w.audited()] == ["answered", "unreadable"]

    scenario(tmp_path, test)


def test_only_an_approver_may_mute_and_an_unknown_agent_is_named(tmp_path: Path) -> None:
    async def test(w: World) -> None:
        assert await w.run("mute worker-1", HUMAN2) == "Only worker-1's approvers can do that."
        assert await w.run("leave worker-1", HUMAN2) == "Only worker-1's approvers can do that."
        assert await w.run("mute lead", APPROVER) == (
            "lead has no approvers, so nobody can do that (name them in agents.lead.approvers)."
        )
        assert not w.engine.state.muted
        text = await w.run("mute nobody", APPROVER)
        assert text == "No agent 'nobody'; the agents are lead, worker-1, worker-2."
        # An approver by group: the platform says the person is in S0OPS.
        assert (await w.run("mute worker-1", HUMAN2, "S0OPS")).startswith("worker-1 is muted")
        # As people name it: `@`, any case, or a short name from the manifest.
        assert await w.run("unmute @Worker-1", HUMAN2) == "Only worker-1's approvers can do that."
        assert w.commands.approvers_of("unmute @Worker-1") == (APPROVER, "group:S0OPS")
        assert w.commands.approvers_of("status") == ()
        outcomes = [(a, o) for a, o, _ in w.audited()]
        assert outcomes == [
            ("worker-1", "refused"),
            ("worker-1", "refused"),
            ("lead", "refused"),
            ("nobody", "unknown"),
            ("worker-1", "answered"),
            ("worker-1", "refused"),
        ]

    scenario(tmp_path, test)


def test_a_muted_agent_gets_no_turn_until_its_mute_ends(tmp_path: Path) -> None:
    async def test(w: World) -> None:
        reply = await w.run("mute worker-1 30m", APPROVER)
        assert reply == "worker-1 is muted until 2026-01-01T00:30:00Z: it gets no new turns."
        muted = (await w.say("1767225600.000100", f"<@{W1}> are you there?"))["worker-1"]
        assert (muted.policy, muted.reason) == (Policy.MUST_NOT_RESPOND, "muted")
        assert w.reactions("worker-1") == ["declined"]  # the asker sees no answer is coming
        await w.say("1767225601.000100", "lunch anyone?")
        assert w.reactions("worker-1") == ["declined"]  # not for it: nothing
        assert "muted until 2026-01-01T00:30:00Z" in await w.run("status")
        w.clock.advance(timedelta(minutes=30))
        back = (await w.say("1767227400.000100", f"<@{W1}> are you there now?"))["worker-1"]
        assert (back.policy, back.reason) == (Policy.MUST_RESPOND, "direct_mention")
        assert w.reactions("worker-1") == ["declined", "seen"]

    scenario(tmp_path, test)


def test_plain_chatter_is_muted_too_and_not_once_unmuted(tmp_path: Path) -> None:
    async def test(w: World) -> None:
        before = await w.say("1767225600.000100", "lunch anyone?")
        await w.run("mute worker-1", APPROVER)
        during = await w.say("1767225601.000100", "lunch anyone?")
        assert during["worker-1"].reason == "muted"
        assert during["worker-2"].reason == before["worker-2"].reason
        assert (
            await w.run("unmute worker-1", APPROVER) == "worker-1 is unmuted: it gets turns again."
        )
        after = await w.say("1767225602.000100", "lunch anyone?")
        assert {a: d.reason for a, d in after.items()} == {a: d.reason for a, d in before.items()}

    scenario(tmp_path, test)


def test_a_mute_outlasts_a_restart(tmp_path: Path) -> None:
    async def test(w: World) -> None:
        await w.run("mute worker-1 1h", APPROVER)
        await w.run("mute worker-2", APPROVER)
        await w.run("unmute worker-2", APPROVER)
        restarted = Engine(local_workspace(), w.store, w.clock)
        await restarted.rebuild()
        assert restarted.state.muted == {"worker-1": parse_time("2026-01-01T01:00:00Z")}
        assert restarted.state.is_muted("worker-1", w.clock.now())

    scenario(tmp_path, test)


def test_leave_ends_the_agent_s_open_work_and_cancels_its_turn(tmp_path: Path) -> None:
    async def test(w: World) -> None:
        assert await w.run("leave worker-1", APPROVER) == (
            "worker-1 is working on nothing: nothing to stop."
        )
        await w.say("1767225600.000100", f"<@{W1}> rebuild the index")
        event_id = next(iter(w.engine.state.messages.values())).event_id
        assert await w.run("leave worker-1", APPROVER) == "Stopped worker-1's turn on 1 message."
        assert w.told == [Cancel("worker-1", event_id, "left_conversation")]
        (stored,) = [
            d for d in await w.store.deliveries(event_id) if d.decision.agent == "worker-1"
        ]
        assert stored.disposition is Disposition.IGNORED
        assert w.engine.state.busy["worker-1"] == 0
        assert "*worker-1*: 0 open" in await w.run("status")

    scenario(tmp_path, test)


def test_an_answer_shows_a_time_to_the_second() -> None:
    """On the system clock a mute ends at some microsecond; the answer shows the second."""
    until = datetime(2026, 11, 27, 17, 4, 3, 273652, tzinfo=UTC)
    assert muted_text("worker-1", until) == (
        "worker-1 is muted until 2026-11-27T17:04:03Z: it gets no new turns."
    )
