"""The per-person turn budget counts model turns, not lines: a burst that already had its turn
and a fragment joining a turn cost nothing more, and a person who keeps the agent answering is
still stopped at the budget (`core.constraints`, `State.open_turns`)."""

from __future__ import annotations

from builders import LEAD, delivered, local_workspace, run
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
