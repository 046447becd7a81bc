"""The attention evaluation's scoring (`bench/attention_eval.py`): the `must_respond` bursts no
answer followed are listed with their lines and reasons. No corpus needed."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from attention_eval import Run, Settings, score_seat, workspace_for
from irc_convert import CHANNEL, IrcRecord, Key


def line(
    idx: int, author: str, text: str, minute: int, reply_to: list[int] | None = None
) -> IrcRecord:
    return {
        "id": f"test/f:{idx}",
        "file": "f",
        "idx": idx,
        "ts": f"2010-03-01T10:{minute:02d}:00",
        "ts_precision": "minute",
        "author": author,
        "kind": "message",
        "text": text,
        "addressee": [],
        "annotated": True,
        "reply_to": reply_to or [],
    }


RECORDS = [
    line(0, "carol", "bob: how do I mount a disk?", 0),
    line(1, "bob", "carol: mount /dev/sdb1 /mnt", 1, reply_to=[0]),
    line(2, "dave", "bob: thanks, that fixed it", 5),
    line(3, "dave", "see you", 5),
    line(4, "erin", "bob: ok I'll try that", 9),
]
TS = {("f", i): f"{1000 + 60 * i}.000100" for i in range(5)}


def run(policies: dict[int, tuple[str, str, str]]) -> Run:
    deliveries = {"agent-1": {TS[("f", i)]: why for i, why in policies.items()}}
    return Run(deliveries=deliveries, turns={}, seconds=1.0, events=5)


def test_a_must_respond_burst_nobody_answered_is_listed_with_its_lines_and_reasons() -> None:
    must = ("buffered", "must_respond", "direct_mention")
    replay = run({0: must, 2: must, 3: ("buffered", "must_respond", "continuation"), 4: must})
    ts_by_key: dict[Key, str] = dict(TS)
    score = score_seat(RECORDS, replay, "agent-1", "bob", ts_by_key)
    assert (score.must_bursts, score.must_hits) == (3, 1)
    assert score.must_missed == [
        [
            "agent-1 (bob)",
            "dave: bob: thanks, that fixed it [must_respond direct_mention]",
            "dave: see you [must_respond continuation]",
        ],
        ["agent-1 (bob)", "erin: bob: ok I'll try that [must_respond direct_mention]"],
    ]


def test_nothing_is_listed_when_every_must_respond_was_answered() -> None:
    replay = run({0: ("buffered", "must_respond", "direct_mention")})
    assert score_seat(RECORDS, replay, "agent-1", "bob", dict(TS)).must_missed == []


ASKED = [
    line(0, "carol", "how do I mount a disk?", 0),
    line(1, "dave", "!mount | carol", 1),
    line(2, "carol", "!mount | dave", 2),
    line(3, "bob", "carol: see the wiki page on mounting", 3, reply_to=[0]),
]
ASKED_TS = {("f", i): f"{at}.000100" for i, at in enumerate((1000, 1010, 1020, 1200))}


def asked(policies: dict[int, tuple[str, str, str]]) -> tuple[int, int]:
    deliveries = {"agent-1": {ASKED_TS[("f", i)]: why for i, why in policies.items()}}
    replay = Run(deliveries=deliveries, turns={}, seconds=1.0, events=4)
    score = score_seat(ASKED, replay, "agent-1", "bob", dict(ASKED_TS))
    return score.covered, score.covered_for_asker


def test_an_answer_in_a_turn_someone_else_asked_for_the_asker_counts_in_the_second_measure() -> (
    None
):
    command = ("buffered", "may_respond", "command")
    assert asked({1: command}) == (0, 1)
    # The asker's own command, in the asker's burst: the first measure counts it, not this one.
    assert asked({2: command}) == (1, 0)
    # A line naming the asker that got no turn, or no turn at all, counts in neither.
    assert asked({1: ("tool_mailbox", "must_not_respond", "addressed_to_other")}) == (0, 0)
    assert asked({}) == (0, 0)


def test_the_settings_set_every_seat_s_budget_and_the_channel_s_questions() -> None:
    agents = {"agent-1": "bob", "agent-2": "carol"}
    assert {workspace_for(agents, Settings(budget=45)).budget(a).turns for a in agents} == {45}
    assert workspace_for(agents).budget("agent-1").turns == 30
    assert workspace_for(agents).channel(CHANNEL).questions == "scored"
    selecting = workspace_for(agents, Settings(questions="select"))
    assert selecting.channel(CHANNEL).questions == "select"
