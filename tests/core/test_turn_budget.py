"""The per-person turn budget counts model turns, not lines: a burst that already had its turn
and a fragment joining a turn cost nothing more, and a person who keeps the agent answering is
still stopped at the budget (`core.constraints`, `State.open_turns`)."""

from __future__ import annotations

from builders import HUMAN, LEAD, delivered, local_workspace, run
from builders import flat_joined as joined
from builders import flat_say as say

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
    sent = [(r["agent"], r["outbound"].get("signal", "notice")) for r in records if "outbound" in r]
    assert sent == [
        ("worker-1", "seen"),
        ("worker-2", "seen"),
        ("worker-1", "queued"),
        ("worker-1", "notice"),
    ]
