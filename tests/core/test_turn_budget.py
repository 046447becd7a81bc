"""The per-person turn budget counts model turns, not lines: a burst that already had its turn
and a fragment joining a turn cost nothing more, and a person who keeps the agent answering is
still stopped at the budget (`core.constraints`, `State.open_turns`)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from builders import (
    FLAT_BASE,
    HUMAN,
    LEAD,
    W1,
    W2,
    delivered,
    flat_at,
    local_workspace,
    run,
    slack_body,
    slack_edit,
    slack_join,
    slack_message,
)
from builders import flat_joined as joined
from builders import flat_say as say

from adapters.slack import normalise
from c2a.records import record_of
from core.clock import VirtualClock, parse_time
from core.emission import Delivery, Emission
from core.engine import Engine
from core.sqlite_store import SQLiteStore
from harness_bridge.turns import Assembler

ASKED = [
    say(10, f"<@{LEAD}> how do I restart nginx?"),
    say(20, "sudo systemctl restart nginx", user=LEAD),
]
# The partner's burst: its first line is a turn, the rest join nothing new.
BURST = [
    say(45, "it says unit not found"),
    say(50, "and the log is empty"),
    say(55, "also port 80 is busy"),
]
ANSWER = say(65, "check `systemctl status nginx`", user=LEAD)
AGAIN = say(75, "still broken after that")


def reasons(budget: int) -> list[str]:
    workspace = local_workspace(budget={"turns": budget, "window_s": 3600})
    records, _, _ = run(joined() + ASKED + BURST + [ANSWER, AGAIN], workspace)
    said = (p["attention"]["reason"] for p in delivered(records)["lead"])
    return [reason for reason in said if reason != "own_message"]


def test_a_burst_costs_one_turn_however_many_lines_it_has() -> None:
    assert reasons(3)[-4:] == [
        "conversation_partner",
        "same_burst",
        "same_burst",
        "conversation_partner",
    ]


def test_a_person_who_keeps_the_agent_answering_is_stopped_at_the_budget() -> None:
    assert reasons(2)[-4:] == ["conversation_partner", "same_burst", "same_burst", "over_budget"]


def outbound(budget_lines: list[str]) -> list[dict[str, object]]:
    workspace = local_workspace(budget={"turns": 2, "window_s": 3600})
    records, _, _ = run(joined() + budget_lines, workspace)
    return [r["outbound"] for r in records if "outbound" in r]


def test_the_first_message_over_the_budget_tells_its_author_when_the_agent_answers_again() -> None:
    asked = [say(60 * n, f"<@{LEAD}> question {n}?") for n in (1, 2, 3, 4)]
    sent = outbound(asked)
    assert [o.get("signal", o["action"]) for o in sent] == [
        "seen",
        "seen",
        "queued",
        "send",  # the notice, once
        "queued",
    ]
    notice = sent[3]
    # The turns of 00:01 and 00:02 fill the budget; the first leaves the hour at 01:01.
    assert "2 of your messages in an hour" in str(notice["text"])
    assert "again at 01:01 UTC (in 58 minutes)" in str(notice["text"])
    assert notice["visibility"] == "ephemeral"  # for the person alone where the platform can
    assert notice["mentions"] == [] and notice["person"] == HUMAN  # to them, pinging nobody
    assert notice["inReplyTo"] == f"slack:T0LOCAL:C0GEN:{1767225600 + 180}.000100"
    assert notice["idempotencyKey"] == f"lead:budget:{HUMAN}:2026-01-01T01:01:00.000100Z"


def test_a_person_still_over_the_budget_is_not_told_twice_and_is_told_again_next_time() -> None:
    asked = [say(60 * n, f"<@{LEAD}> question {n}?") for n in (1, 2, 3, 4)]
    # 01:01:40: the 00:01 turn has left the hour, a turn; 01:01:50: over again until 01:02.
    later = [say(3700, f"<@{LEAD}> back again?"), say(3710, f"<@{LEAD}> and again?")]
    sent = outbound(asked + later)
    notices = [o for o in sent if o["action"] == "send"]
    kinds = [o.get("signal", o["action"]) for o in sent]
    assert kinds[3:] == ["send", "queued", "seen", "queued", "send"]
    assert [o["idempotencyKey"] for o in notices] == [
        f"lead:budget:{HUMAN}:2026-01-01T01:01:00.000100Z",
        f"lead:budget:{HUMAN}:2026-01-01T01:02:00.000100Z",
    ]
    assert "again at 01:02 UTC (in 1 minute)" in str(notices[1]["text"])


def test_a_line_the_agent_may_answer_gets_no_notice_over_the_budget() -> None:
    assert reasons(2)[-1] == "over_budget"  # the partner's line: may_respond, no clock
    workspace = local_workspace(budget={"turns": 2, "window_s": 3600})
    records, _, _ = run(joined() + ASKED + BURST + [ANSWER, AGAIN], workspace)
    assert [r["outbound"]["action"] for r in records if "outbound" in r] == ["react"]


def test_a_role_question_goes_to_a_responder_within_the_asker_s_budget() -> None:
    # Manifest order would pick worker-1 every time; the budget (one turn) must still hold,
    # as it does for a mention: the second question goes to worker-2, and the third, with
    # both at the budget, is held for the first in order, with its clock and notice.
    workspace = local_workspace(
        budget={"turns": 1, "window_s": 3600}, attention={"selection": "order"}
    )
    asked = [say(60 * n, f"<!subteam^S0BACK> can someone look at build {n}?") for n in (1, 2, 3)]
    records, _, _ = run(joined() + asked, workspace)
    held = {
        agent: [(p["injection"]["mode"], p["attention"]["reason"]) for p in said[-3:]]
        for agent, said in delivered(records).items()
        if agent != "lead"
    }
    assert held == {
        "worker-1": [
            ("buffered", "role_mention"),
            ("notify", "claimed_by_other"),
            ("tool_mailbox", "over_budget"),
        ],
        "worker-2": [
            ("notify", "claimed_by_other"),
            ("buffered", "role_mention"),
            ("notify", "claimed_by_other"),
        ],
    }
    # Held, it is owed as a mention held over the budget is: taken up once the budget frees.
    assert delivered(records)["worker-1"][-1]["attention"]["policy"] == "must_respond"
    sent = [(r["agent"], r["outbound"].get("signal", "notice")) for r in records if "outbound" in r]
    assert sent == [
        ("worker-1", "seen"),
        ("worker-2", "seen"),
        ("worker-1", "queued"),
        ("worker-1", "notice"),
    ]


# ---- what was held over the budget is taken up once it frees (`core.followup`) ---------------

HOUR = {"turns": 1, "window_s": 3600}


async def ask(engine: Engine, second: int, text: str) -> list[tuple[str, str, str]]:
    """`HUMAN` says `text` in #general `second` seconds in; what the lead is given of it."""
    event = normalise(slack_body(slack_message(f"{FLAT_BASE + second}.000100", text)))
    assert event is not None
    async with engine.transaction():
        outcome = await engine.ingest(event)
    return seen(await to_lead(engine, outcome.emissions))


async def sweep_at(engine: Engine, clock: VirtualClock, second: int) -> list[Delivery]:
    """The follow-up sweep `second` seconds in; what it gives the lead."""
    clock.set(parse_time(flat_at(second)))
    async with engine.transaction():
        emissions = await engine.sweep()
    return await to_lead(engine, emissions)


async def to_lead(engine: Engine, emissions: list[Emission]) -> list[Delivery]:
    """The lead's deliveries among `emissions`; every delivery is marked delivered, as a
    harness taking it would."""
    lead: list[Delivery] = []
    for emission in emissions:
        if isinstance(emission, Delivery):
            decision = emission.decision
            async with engine.transaction():
                await engine.store.mark_delivered(decision.event_id, decision.agent, 1)
            if decision.agent == "lead":
                lead.append(emission)
    return lead


def seen(deliveries: list[Delivery]) -> list[tuple[str, str, str]]:
    """(event id, reason, mode) of each delivery."""
    return [(d.decision.event_id, d.decision.reason, str(d.decision.mode)) for d in deliveries]


async def budget_world(path: str, budget: dict[str, int] = HOUR) -> tuple[Engine, VirtualClock]:
    clock = VirtualClock(parse_time(flat_at(0)))
    store = SQLiteStore(path)
    await store.open()
    engine = Engine(local_workspace(budget=budget), store, clock)
    for user in (LEAD, W1, W2):
        async with engine.transaction():
            await engine.ingest(normalise(slack_body(slack_join(user))))
    return engine, clock


def question(second: int) -> str:
    return f"slack:T0LOCAL:C0GEN:{FLAT_BASE + second}.000100"


def test_questions_held_over_the_budget_are_taken_up_in_one_turn_once_it_frees(
    tmp_path: Path,
) -> None:
    async def run() -> None:
        engine, clock = await budget_world(str(tmp_path / "ledger.db"))
        clock.set(parse_time(flat_at(60)))
        assert await ask(engine, 60, f"<@{LEAD}> question one?") == [
            (question(60), "direct_mention", "buffered")
        ]
        clock.set(parse_time(flat_at(120)))
        held = await ask(engine, 120, f"<@{LEAD}> question two?")
        clock.set(parse_time(flat_at(180)))
        held += await ask(engine, 180, f"<@{LEAD}> question three?")
        assert held == [
            (question(120), "over_budget", "tool_mailbox"),
            (question(180), "over_budget", "tool_mailbox"),
        ]
        # Past the answer deadline, the question within the budget gets its reminder; the held
        # ones wait for the budget (the notice told their asker when), however long that is.
        assert seen(await sweep_at(engine, clock, 500)) == [
            (question(60) + "~reminder", "reminder", "buffered")
        ]
        assert await sweep_at(engine, clock, 3300) == []
        clock.set(parse_time(flat_at(3400)))
        assert await ask(engine, 3400, f"<@{LEAD}> question five?") == [
            (question(3400), "over_budget", "tool_mailbox")
        ]
        # 01:01:00, the turn of 00:01:00 leaves the hour: every held question, in one turn,
        # the one asked four minutes ago (not yet past the answer deadline) too.
        taken = await sweep_at(engine, clock, 3661)
        assert seen(taken) == [
            (question(120) + "~reminder", "reminder", "buffered"),
            (question(180) + "~reminder", "reminder", "buffered"),
            (question(3400) + "~reminder", "reminder", "buffered"),
        ]
        for asked in (120, 180, 3400):  # each shows 👀 now in place of its 🕐
            key = f"{question(asked)}:lead:react"
            lifted = await engine.store.outbox_get(f"{key}:queued:lifted")
            seen_now = await engine.store.outbox_get(f"{key}:seen")
            assert lifted is not None
            assert (lifted.action["action"], lifted.action["signal"]) == ("unreact", "queued")
            assert seen_now is not None and seen_now.action["signal"] == "seen"
        assembler = Assembler(clock)  # the harness's side: one person's, gathered
        for delivery in taken:
            assert assembler.deliver(record_of(delivery).body["params"]) == []
        clock.advance(timedelta(seconds=30))
        (turn,) = assembler.due()
        assert turn.event_ids == [event_id for event_id, _, _ in seen(taken)]
        assert await sweep_at(engine, clock, 3670) == []  # taken up once
        await engine.store.close()

        # That turn counts against the budget, after a restart too (the ledger folded again).
        engine, clock = await budget_world(str(tmp_path / "ledger.db"))
        await engine.start()
        clock.set(parse_time(flat_at(3700)))
        assert await ask(engine, 3700, f"<@{LEAD}> question four?") == [
            (question(3700), "over_budget", "tool_mailbox")
        ]
        await engine.store.close()

    asyncio.run(run())


def test_a_held_question_edited_is_still_held_until_the_budget_frees(tmp_path: Path) -> None:
    async def run() -> None:
        engine, clock = await budget_world(str(tmp_path / "ledger.db"))
        clock.set(parse_time(flat_at(60)))
        await ask(engine, 60, f"<@{LEAD}> question one?")
        clock.set(parse_time(flat_at(120)))
        assert await ask(engine, 120, f"<@{LEAD}> question two?") == [
            (question(120), "over_budget", "tool_mailbox")
        ]
        clock.set(parse_time(flat_at(130)))
        edited = f"{FLAT_BASE + 130}.000100"
        old, new = f"<@{LEAD}> question two?", f"<@{LEAD}> two, rather?"
        edit = slack_edit(f"{FLAT_BASE + 120}.000100", edited, old, new)
        event = normalise(slack_body(edit))
        assert event is not None
        async with engine.transaction():
            outcome = await engine.ingest(event)
        version = f"{question(120)}~{edited}"
        assert seen(await to_lead(engine, outcome.emissions)) == [
            (version, "over_budget", "tool_mailbox")
        ]
        # Past the answer deadline the first question is reminded; the edited one waits.
        reminded = seen(await sweep_at(engine, clock, 1000))
        assert reminded == [(question(60) + "~reminder", "reminder", "buffered")]
        assert seen(await sweep_at(engine, clock, 3661)) == [
            (version + "~reminder", "reminder", "buffered")
        ]
        await engine.store.close()

    asyncio.run(run())


def test_a_catch_up_folded_again_counts_once(tmp_path: Path) -> None:
    """Where several processes share the ledger, each folds the records appended since its
    last event, its own catch-up's among them: that turn is counted once."""

    async def run() -> None:
        engine, clock = await budget_world(str(tmp_path / "ledger.db"), {**HOUR, "turns": 2})
        for second in (60, 120, 180):  # two turns; the third question is held
            clock.set(parse_time(flat_at(second)))
            await ask(engine, second, f"<@{LEAD}> question at {second}?")
        taken = await sweep_at(engine, clock, 3661)  # the turn of 00:01 left the hour
        assert [event_id for event_id, _, _ in seen(taken)][-1] == question(180) + "~reminder"
        async with engine.transaction():
            await engine.catch_up()  # its own records folded again, the catch-up's among them
        # 01:02:10: the turn of 00:02 has left too; the catch-up's is the one left.
        clock.set(parse_time(flat_at(3730)))
        assert await ask(engine, 3730, f"<@{LEAD}> and now?") == [
            (question(3730), "direct_mention", "buffered")
        ]
        await engine.store.close()

    asyncio.run(run())
