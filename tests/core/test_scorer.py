"""The learned scorer of the `to_me_likely` band (`core.scorer`): what it reads, the weights
file it trusts only when well formed, and the decisions it may change and those it may not."""

from __future__ import annotations

import json
import math
import time
from typing import Any

import pytest
from builders import (
    HUMAN,
    HUMAN2,
    LEAD,
    W1,
    axes,
    delivered,
    run,
)
from builders import (
    flat_joined as joined,
)
from builders import (
    flat_say as say,
)

import core.state
from core.continuity import PARTNER, ROOM_QUESTION, ROOM_STATEMENT, Cue, states
from core.errors import C2AError
from core.scorer import FEATURES, Scorer, default_scorer, features


def verdicts(lines: list[str], agent: str = "lead") -> list[tuple[str, str, str, str]]:
    records, _, _ = run(joined() + lines)
    return [(*axes(p), p["attention"]["reason"]) for p in delivered(records)[agent]]


def constant(bias: float) -> Scorer:
    """A scorer that gives every cue the same probability."""
    return Scorer((bias,) + (0.0,) * (len(FEATURES) - 1), 0.5)


@pytest.fixture
def accept_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core.state, "default_scorer", lambda: constant(9.0))


@pytest.fixture
def refuse_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core.state, "default_scorer", lambda: constant(-9.0))


@pytest.fixture
def rules_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core.state, "default_scorer", lambda: None)


ASKED = [
    say(10, f"<@{LEAD}> how do I restart nginx?"),
    say(20, "sudo systemctl restart nginx", user=LEAD),
]
ROOM_ASK = say(30, "does anyone know why apt hangs at 99%?", user=HUMAN2)


def cue(**changes: Any) -> Cue:
    base: dict[str, Any] = {
        "reason": PARTNER,
        "lines_since": 2,
        "seconds_since": 40.0,
        "gap": 12.0,
        "in_burst": False,
        "burst_turned": False,
        "agent_spoke_last": True,
    }
    return Cue(**(base | changes))


def test_the_features_are_named_in_order_and_finite_for_any_cue() -> None:
    for one in (
        cue(),
        cue(reason=ROOM_QUESTION, lines_since=10**9, seconds_since=-5.0, gap=0.0, length=10**6),
        cue(exchanged=-1, agent_lines_since=-1, activity=1e9, taken_up=1e9),
    ):
        numbers = features(one)
        assert len(numbers) == len(FEATURES)
        assert all(math.isfinite(n) for n in numbers)


def test_the_shipped_weights_are_read_once_and_give_a_probability() -> None:
    scorer = default_scorer()
    assert scorer is default_scorer()
    assert len(scorer.weights) == len(FEATURES)
    assert 0.0 < scorer.threshold < scorer.statement_threshold < 1.0
    assert 0.0 <= scorer.probability(cue()) <= 1.0


def test_a_score_is_a_probability_for_any_cue_and_weights() -> None:
    extremes = (
        cue(reason=ROOM_STATEMENT, lines_since=10**9, gap=float("nan"), length=10**6),
        cue(reason=ROOM_QUESTION, asks=True, exchanged=10**9, activity=-1e9, taken_up=1e9),
        cue(author_lines=-5, agent_lines_since=-7, seconds_since=float("inf")),
    )
    for weight in (-1e6, -1.0, 0.0, 1.0, 1e6):
        scorer = Scorer((weight,) * len(FEATURES), 0.5, 0.5)
        for one in extremes:
            assert 0.0 <= scorer.probability(one) <= 1.0


def test_scoring_is_deterministic_and_takes_microseconds() -> None:
    scorer, one = default_scorer(), cue(asks=True, activity=3.0)
    first = scorer.probability(one)
    started = time.perf_counter()
    for _ in range(20_000):
        assert scorer.probability(one) == first
    assert (time.perf_counter() - started) / 20_000 < 50e-6


GOOD = {
    "features": list(FEATURES),
    "weights": [0.0] * len(FEATURES),
    "threshold": 0.2,
    "statement_threshold": 0.3,
}


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ([], "a JSON object"),
        (GOOD | {"features": list(FEATURES)[:-1]}, "other features"),
        (GOOD | {"weights": [0.0] * (len(FEATURES) - 1)}, "finite numbers"),
        (GOOD | {"weights": [float("nan")] * len(FEATURES)}, "finite numbers"),
        (GOOD | {"weights": ["1"] * len(FEATURES)}, "finite numbers"),
        (GOOD | {"threshold": 1.5}, "from 0 to 1"),
        (GOOD | {"threshold": None}, "from 0 to 1"),
        (GOOD | {"threshold": True}, "'threshold' must be"),
        ({k: v for k, v in GOOD.items() if k != "statement_threshold"}, "'statement_threshold'"),
        (GOOD | {"statement_threshold": -0.1}, "'statement_threshold' must be a number from 0"),
    ],
)
def test_a_malformed_weights_file_is_refused_saying_why(data: Any, says: str) -> None:
    with pytest.raises(C2AError, match=says) as raised:
        Scorer.from_data(json.loads(json.dumps(data)), "weights.json")
    assert str(raised.value).startswith("weights.json: ")


def test_the_weights_file_round_trips() -> None:
    scorer = Scorer.from_data(GOOD, "w")
    assert (scorer.threshold, scorer.statement_threshold) == (0.2, 0.3)


def test_a_statement_is_held_to_its_own_threshold() -> None:
    scorer = Scorer((0.0,) * len(FEATURES), 0.4, 0.6)  # every cue scores 0.5
    assert scorer.likely(cue(reason=ROOM_QUESTION, asks=True))
    assert not scorer.likely(cue(reason=ROOM_STATEMENT, asks=False))
    assert Scorer((0.0,) * len(FEATURES), 0.4, 0.5).likely(cue(reason=ROOM_STATEMENT))


@pytest.mark.usefixtures("refuse_all")
def test_the_scorer_never_turns_down_a_line_a_continuity_rule_decided() -> None:
    partner = ASKED + [say(80, "it says unit not found")]
    assert verdicts(partner)[-1] == (
        "to_me_likely",
        "may_respond",
        "buffered",
        "conversation_partner",
    )
    room = [say(10, "has anyone seen the flaky clock test?", user=LEAD)]
    room.append(say(20, "what clock test?", user=HUMAN2))
    assert verdicts(room)[-1][2:] == ("buffered", "answer_to_my_line")


@pytest.mark.usefixtures("refuse_all")
def test_the_scorer_never_touches_a_mention_or_a_dm_rule() -> None:
    lines = ASKED + [say(80, f"<@{LEAD}> it says unit not found")]
    assert verdicts(lines)[-1] == ("to_me", "must_respond", "buffered", "direct_mention")


@pytest.mark.usefixtures("refuse_all")
def test_a_room_question_the_scorer_turns_down_is_chatter() -> None:
    assert verdicts([ROOM_ASK])[-1][3] == "unaddressed"


@pytest.mark.usefixtures("accept_all")
def test_a_room_question_the_scorer_takes_is_a_turn_the_agent_may_answer() -> None:
    for agent in ("lead", "worker-1", "worker-2"):
        last = verdicts([ROOM_ASK], agent)[-1]
        assert last == ("to_me_likely", "may_respond", "buffered", "room_question")


@pytest.mark.usefixtures("accept_all")
def test_a_statement_to_nobody_is_not_a_room_question() -> None:
    assert verdicts([say(30, "apt hangs at 99% here", user=HUMAN2)])[-1][3] == "unaddressed"


def test_only_a_line_that_says_something_is_a_statement() -> None:
    assert states("apt hangs at 99% here")
    assert not states("   ")
    assert not states("!paste")
    assert not states("thanks, that fixed it")
    assert not states("ok")


@pytest.fixture
def accept_statements(monkeypatch: pytest.MonkeyPatch) -> None:
    taking = Scorer((9.0,) + (0.0,) * (len(FEATURES) - 1), 0.5, 0.5)
    monkeypatch.setattr(core.state, "default_scorer", lambda: taking)


def test_the_shipped_scorer_takes_a_former_partners_statement_not_a_strangers() -> None:
    back = verdicts(ASKED + [say(3600, "it says unit not found")])[-1]
    assert back == ("to_me_likely", "may_respond", "buffered", "room_statement")
    stranger = verdicts([say(30, "apt hangs at 99% here", user=HUMAN2)])[-1]
    assert stranger[1:] == ("must_not_respond", "tool_mailbox", "unaddressed")


@pytest.mark.usefixtures("accept_statements")
def test_a_statement_the_scorer_takes_is_a_turn_the_agent_may_answer() -> None:
    lines = [say(30, "apt hangs at 99% here", user=HUMAN2)]
    assert verdicts(lines)[-1] == ("to_me_likely", "may_respond", "buffered", "room_statement")


@pytest.mark.usefixtures("accept_statements")
def test_a_taken_statement_that_is_a_status_or_a_closing_decides_as_before() -> None:
    status = verdicts([say(30, "deploy finished, all green", user=HUMAN2)])[-1]
    assert status[1:] == ("must_not_respond", "digest", "status_broadcast")
    closing = verdicts([say(30, "thanks all, got it working", user=HUMAN2)])[-1]
    assert closing[1:] == ("must_not_respond", "tool_mailbox", "unaddressed")


@pytest.mark.usefixtures("accept_statements")
def test_a_statement_is_no_cue_beside_a_rule_or_a_mention() -> None:
    partner = ASKED + [say(80, "it says unit not found")]
    assert verdicts(partner)[-1][3] == "conversation_partner"
    other = verdicts(ASKED + [say(80, "it says unit not found")], "worker-1")[-1]
    assert other[3] == "unaddressed"
    mention = ASKED + [say(80, f"<@{LEAD}> it says unit not found")]
    assert verdicts(mention)[-1][3] == "direct_mention"


@pytest.mark.usefixtures("accept_all")
def test_the_scorer_cannot_turn_a_closing_or_a_second_burst_line_into_a_turn() -> None:
    closing = ASKED + [say(80, "thanks, that fixed it")]
    assert verdicts(closing)[-1][1:] == ("must_not_respond", "tool_mailbox", "thanks")
    burst = [ROOM_ASK, say(40, "is it the mirror?", user=HUMAN2)]
    assert verdicts(burst)[-1][2:] == ("tool_mailbox", "unaddressed")


@pytest.mark.usefixtures("accept_all")
def test_an_agents_own_line_and_another_agents_are_never_scored() -> None:
    lines = [say(30, "does anyone know why apt hangs?", user=W1)]
    assert verdicts(lines)[-1][3] == "agent_message"
    assert verdicts(lines, "worker-1")[-1][3] == "own_message"


@pytest.mark.usefixtures("rules_only")
def test_without_a_scorer_the_rules_decide_the_band_and_room_questions_are_chatter() -> None:
    assert verdicts([ROOM_ASK])[-1][3] == "unaddressed"
    assert verdicts([say(30, "apt hangs at 99% here", user=HUMAN2)])[-1][3] == "unaddressed"
    lines = ASKED + [say(80, "it says unit not found")]
    assert verdicts(lines)[-1] == (
        "to_me_likely",
        "may_respond",
        "buffered",
        "conversation_partner",
    )


class Watching(Scorer):
    """A scorer that takes every cue and keeps it, to see what continuity told it."""

    seen: list[Cue]

    def likely(self, cue: Cue) -> bool:
        self.seen.append(cue)
        return True


def test_continuity_remembers_which_agent_takes_up_questions_to_the_room(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    watching = Watching((0.0,) * len(FEATURES), 0.5)
    object.__setattr__(watching, "seen", [])
    monkeypatch.setattr(core.state, "default_scorer", lambda: watching)
    lines = [
        ROOM_ASK,
        say(40, f"<@{HUMAN2}> check /var/log/apt/term.log", user=LEAD),
        say(200, "what does E: Sub-process mean?", user=HUMAN),
    ]
    run(joined() + lines)
    first, last = watching.seen[0], watching.seen[-3:]
    assert first.reason == ROOM_QUESTION and first.taken_up == 0.0 and first.author_lines == 0
    by_reason = {c.reason for c in last}
    assert by_reason == {ROOM_QUESTION}
    lead, worker = last[0], last[1]
    assert lead.taken_up > 0.5 and worker.taken_up == 0.0
    assert lead.activity > 0.5 and worker.activity == 0.0
    assert lead.agent_lines_since == 1 and worker.agent_lines_since == -1
    assert lead.asks and lead.length == len("what does E: Sub-process mean?")
