"""A question already answered in the gap is not answered again: a late `must_respond` question
that another person answered, also late, before its agent got to it becomes `may_respond` with
the reason `answered_in_gap`, which the model sees. Live decisions never change this way.

A real Host on SQLite, fed Slack and Discord payloads as the catch-up (or a gateway replay)
hands them over: received two hours after they were sent."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from builders import (
    D_HUMAN,
    D_HUMAN2,
    D_LEAD,
    GUILD,
    HUMAN,
    HUMAN2,
    LEAD,
    TEAM,
    W1,
    discord_dispatch,
    discord_message,
    local_workspace,
    slack_body,
    slack_message,
)

from adapters.slack.normalise import normalise as normalise_slack
from c2a.host import Host
from core.clock import VirtualClock
from core.deciding import LATE_HELD, Decider
from core.decision import Decision, Directedness, InjectionMode, Policy
from core.emission import Emission
from core.sqlite_store import SQLiteStore
from core.state import State
from harness_bridge.envelope import deliver_request
from harness_bridge.prompt import parse_rendered, render_event
from harness_bridge.wire import parse_deliver

SENT = datetime(2026, 1, 1, 0, 0, tzinfo=UTC)  # slack ts 1767225600, discord 2026-01-01T00:00
LATE = SENT + timedelta(hours=2)
Q_TS, A_TS = "1767225600.000100", "1767225660.000100"
QUESTION = f"slack:{TEAM}:C0GEN:{Q_TS}"
Q_ID, A_ID = "1100000000000000001", "1100000000000000002"
D_QUESTION = f"discord:{Q_ID}"


class Rig:
    def __init__(self, host: Host, clock: VirtualClock) -> None:
        self.host = host
        self.clock = clock

    async def slack(self, event: dict[str, Any]) -> None:
        await self.host.receive("slack", slack_body(event, via="lead"), "lead")

    async def discord(self, payload: dict[str, Any]) -> None:
        await self.host.receive("discord", payload, "lead")

    async def answered_reading(self) -> list[int]:
        """Another person's late thread reply answers the question; the ledger entries it read."""
        store = self.host.store
        read: list[int] = []
        entry = store.entry

        async def counted(seq: int) -> Any:
            read.append(seq)
            return await entry(seq)

        store.entry = counted  # type: ignore[method-assign]
        await self.slack(slack_message(A_TS, "yes, CI is red", user=HUMAN2, thread_ts=Q_TS))
        assert await self.lead(QUESTION) == ANSWERED
        return read

    async def lead(self, event_id: str) -> tuple[Policy, str]:
        [found] = [
            d for d in await self.host.store.deliveries(event_id) if d.decision.agent == "lead"
        ]
        return found.decision.policy, found.decision.reason


def run(scenario: Callable[[Rig], Awaitable[None]], *, at: datetime = LATE) -> None:
    async def main() -> None:
        async def sink(emissions: list[Emission]) -> None:
            return None

        clock = VirtualClock(at)
        host = Host(local_workspace(), SQLiteStore(":memory:"), clock, sink)
        await host.start()
        try:
            await scenario(Rig(host, clock))
        finally:
            await host.close()

    asyncio.run(main())


def question() -> dict[str, Any]:
    return slack_message(Q_TS, f"<@{LEAD}> is the deploy blocked?")


ANSWERED = (Policy.MAY_RESPOND, "answered_in_gap")
ASKED = (Policy.MUST_RESPOND, "direct_mention")


# ---- Slack --------------------------------------------------------------------------------------


def test_a_thread_reply_from_another_person_answers_the_late_question() -> None:
    async def scenario(rig: Rig) -> None:
        await rig.slack(question())
        assert await rig.lead(QUESTION) == (Policy.MAY_RESPOND, "expired")  # as it would be live

    # within the deadline, so the question is still a must_respond when it arrives late
    async def fresh(rig: Rig) -> None:
        await rig.slack(question())
        assert await rig.lead(QUESTION) == ASKED
        await rig.slack(slack_message(A_TS, "yes, CI is red", user=HUMAN2, thread_ts=Q_TS))
        assert await rig.lead(QUESTION) == ANSWERED
        # the model sees why, when the delivery reaches it
        [stored] = [
            d for d in await rig.host.store.pending("lead") if d.decision.event_id == QUESTION
        ]
        message = deliver_request(
            await rig.host.engine.deliveries.delivery(stored), compact=False, attempt=1
        )
        (event,) = parse_rendered(render_event(parse_deliver(message["params"])))
        assert (event["response_policy"], event["reason"]) == ("may_respond", "answered_in_gap")
        assert event["late"].startswith("sent 3 min before the host received it")
        assert rig.host.engine.state.busy.get("lead", 0) == 0  # no open obligation left

    run(scenario)
    run(fresh, at=SENT + timedelta(minutes=4))


@pytest.mark.parametrize(
    ("answer", "answered"),
    [
        (slack_message(A_TS, f"<@{HUMAN}> it is fixed", user=HUMAN2), True),  # to the asker
        (slack_message(A_TS, "it is fixed", user=HUMAN2), False),  # to nobody
        (slack_message(A_TS, "never mind", user=HUMAN, thread_ts=Q_TS), False),  # the asker
        (slack_message(A_TS, "on it", user=W1, thread_ts=Q_TS), False),  # an agent
        (slack_message(A_TS, f"<@{HUMAN}> yes", user=HUMAN2, channel="C0OPS"), False),  # elsewhere
        (slack_message("1767225599.000100", "earlier", user=HUMAN2, thread_ts=Q_TS), False),
    ],
    ids=["mentions-asker", "flat-unaddressed", "by-asker", "by-agent", "other-channel", "before"],
)
def test_only_another_persons_later_answer_to_it_counts(
    answer: dict[str, Any], answered: bool
) -> None:
    async def scenario(rig: Rig) -> None:
        await rig.slack(question())
        await rig.slack(answer)
        assert await rig.lead(QUESTION) == (ANSWERED if answered else ASKED)

    run(scenario, at=SENT + timedelta(minutes=4))


def test_live_questions_are_never_revised() -> None:
    async def scenario(rig: Rig) -> None:
        await rig.slack(question())
        rig.clock.set(SENT + timedelta(seconds=70))
        await rig.slack(slack_message(A_TS, "yes, CI is red", user=HUMAN2, thread_ts=Q_TS))
        assert await rig.lead(QUESTION) == ASKED

    run(scenario, at=SENT + timedelta(seconds=5))


def test_a_question_its_agent_already_has_is_left_alone() -> None:
    async def scenario(rig: Rig) -> None:
        await rig.slack(question())
        await rig.host.store.mark_delivered(QUESTION, "lead", 1)
        await rig.slack(slack_message(A_TS, "yes, CI is red", user=HUMAN2, thread_ts=Q_TS))
        assert await rig.lead(QUESTION) == ASKED

    run(scenario, at=SENT + timedelta(minutes=4))


def test_a_late_question_pending_at_a_restart_is_still_answered_in_the_gap() -> None:
    """The late questions a reply may answer are folded from the ledger with the rest."""

    async def scenario(rig: Rig) -> None:
        await rig.slack(question())
        await rig.host.engine.rebuild()  # a restart: the state is folded from the ledger again
        await rig.slack(slack_message(A_TS, "yes, CI is red", user=HUMAN2, thread_ts=Q_TS))
        assert await rig.lead(QUESTION) == ANSWERED

    run(scenario, at=SENT + timedelta(minutes=4))


def test_a_late_reply_reads_only_the_questions_that_came_late() -> None:
    """Live questions still pending (a harness that is away) are not read by every late reply:
    only a question received late can be answered in the gap."""
    at = SENT + timedelta(minutes=4)
    now = int(at.timestamp())

    async def scenario(rig: Rig) -> None:
        for n in range(25):  # within one person's turn budget: each stays a must_respond
            await rig.slack(slack_message(f"{now}.{n:06d}", f"<@{LEAD}> live question {n}?"))
        await rig.slack(question())
        read = await rig.answered_reading()
        assert len(read) == 1  # the late question, not the 25 live ones

    run(scenario, at=at)


def test_a_late_reply_reads_only_the_late_questions_it_could_answer() -> None:
    """A catch-up floods late questions into many conversations at once: a late reply reads
    only those asked where it was said (or the one it references), not every one of them."""

    async def scenario(rig: Rig) -> None:
        for n in range(25):  # late questions in 25 other channels, none answered yet
            elsewhere = slack_message(Q_TS, f"<@{LEAD}> blocked {n}?", channel=f"C0X{n:02d}")
            await rig.slack(elsewhere)
        await rig.slack(question())
        assert len(rig.host.engine.state.late_questions) == 26
        read = await rig.answered_reading()
        assert len(read) == 1  # the question of its own channel, not the 25 elsewhere
        assert len(rig.host.engine.state.late_questions) == 25  # theirs still wait

    run(scenario, at=SENT + timedelta(minutes=4))


def test_late_questions_held_are_bounded() -> None:
    """Past `LATE_HELD` the oldest late question is forgotten (and simply delivered)."""
    state = State(local_workspace())
    decider = Decider(local_workspace(), SQLiteStore(":memory:"), {})
    for seq in range(LATE_HELD + 3):
        event = normalise_slack(slack_body(slack_message(f"1767225600.{seq:06d}", "blocked?")))
        assert event is not None
        must = Decision(
            event.event_id,
            "lead",
            Directedness.TO_ME,
            Policy.MUST_RESPOND,
            InjectionMode.BUFFERED,
            "direct_mention",
        )
        decider.note_question(event, seq, [must], LATE, state)
    assert len(state.late_questions) == LATE_HELD
    assert next(iter(state.late_questions)) == 3


# ---- Discord ------------------------------------------------------------------------------------


def d_question() -> dict[str, Any]:
    return discord_message(Q_ID, f"<@{D_LEAD}> is the deploy blocked?", mentions=[D_LEAD])


@pytest.mark.parametrize(
    ("answer", "answered"),
    [
        (discord_message(A_ID, "CI is red", author=D_HUMAN2, reply_to=(Q_ID, D_HUMAN)), True),
        (discord_message(A_ID, f"<@{D_HUMAN}> red", author=D_HUMAN2, mentions=[D_HUMAN]), True),
        (discord_message(A_ID, "lunch?", author=D_HUMAN2), False),
        (discord_message(A_ID, "ok", author=D_HUMAN, reply_to=(Q_ID, D_HUMAN)), False),
    ],
    ids=["reply-reference", "mentions-asker", "unaddressed", "by-asker"],
)
def test_a_discord_reply_answers_the_late_question(answer: dict[str, Any], answered: bool) -> None:
    answer["d"]["timestamp"] = "2026-01-01T00:01:00+00:00"

    async def scenario(rig: Rig) -> None:
        await rig.discord(d_question())
        await rig.discord(answer)
        assert await rig.lead(D_QUESTION) == (ANSWERED if answered else ASKED)

    run(scenario, at=SENT + timedelta(minutes=4))


def test_a_later_message_in_the_same_discord_thread_answers_it() -> None:
    thread, parent = "830000000000000001", "820000000000000001"
    created = {"id": thread, "type": 11, "parent_id": parent, "guild_id": GUILD}
    created |= {"owner_id": D_HUMAN, "name": "deploy"}
    ask = discord_message(Q_ID, f"<@{D_LEAD}> blocked?", mentions=[D_LEAD], channel=thread)
    answer = discord_message(A_ID, "yes", author=D_HUMAN2, channel=thread)
    answer["d"]["timestamp"] = "2026-01-01T00:01:00+00:00"

    async def scenario(rig: Rig) -> None:
        await rig.discord(discord_dispatch("THREAD_CREATE", created))
        await rig.discord(ask)
        assert await rig.lead(D_QUESTION) == ASKED
        await rig.discord(answer)
        assert await rig.lead(D_QUESTION) == ANSWERED

    run(scenario, at=SENT + timedelta(minutes=4))
