"""A channel whose questions to the room get one answer (`channels.<id>.questions: select`):
a question that names nobody and that no rule or the scorer gives to an agent is offered to
every agent and claimed by one, as a `select` broadcast is; anything else decides as before."""

from __future__ import annotations

import pytest
import yaml
from builders import HUMAN2, LEAD, LOCAL, W1, axes, delivered, local_workspace, run
from builders import flat_joined as joined
from builders import flat_say as say

import core.state
from c2a.platforms import installed
from core.manifest import Workspace, parse_manifest
from core.scorer import FEATURES, Scorer

AGENTS = ("lead", "worker-1", "worker-2")
ROOM_ASK = say(30, "does anyone know why apt hangs at 99%?", user=HUMAN2)


def selecting() -> Workspace:
    """The shipped local manifest with #general selecting one agent for room questions, and
    names people type for the workers."""
    data = yaml.safe_load(LOCAL.read_text())
    data["channels"] = {"C0GEN": {"questions": "select"}}
    data["agents"]["worker-1"]["names"] = ["worker-1"]
    return Workspace.from_manifest(parse_manifest(data, platforms=installed()), installed())


def last_verdicts(lines: list[str], workspace: Workspace) -> dict[str, tuple[str, ...]]:
    """Each agent's decision on the last line: directedness, policy, mode and reason."""
    records, _, _ = run(joined() + lines, workspace)
    return {
        agent: (*axes(found[-1]), found[-1]["attention"]["reason"])
        for agent, found in delivered(records).items()
    }


@pytest.fixture(autouse=True)
def _scorer_takes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh room: the scorer finds no question likely for anyone."""
    refusing = Scorer((-9.0,) + (0.0,) * (len(FEATURES) - 1), 0.5)
    monkeypatch.setattr(core.state, "default_scorer", lambda: refusing)


def test_a_question_to_the_room_is_claimed_by_one_agent_and_the_others_stay_out() -> None:
    found = last_verdicts([ROOM_ASK], selecting())

    answering = [a for a, v in found.items() if v[1] == "may_respond"]
    assert len(answering) == 1
    [agent] = answering
    assert found[agent] == ("to_my_role", "may_respond", "buffered", "room_question")
    for other in set(AGENTS) - {agent}:
        assert found[other][1:] == ("must_not_respond", "notify", "claimed_by_other")


def test_without_the_setting_a_question_nobody_is_likely_to_take_is_chatter() -> None:
    found = last_verdicts([ROOM_ASK], local_workspace())
    assert {v[1:] for v in found.values()} == {("must_not_respond", "tool_mailbox", "unaddressed")}


def test_a_statement_and_the_rest_of_the_askers_burst_are_not_offered() -> None:
    statement = last_verdicts([say(30, "apt hangs at 99% here", user=HUMAN2)], selecting())
    assert {v[3] for v in statement.values()} == {"unaddressed"}
    # Within the merge window a second line is more of the question: the same turn.
    fragment = last_verdicts([ROOM_ASK, say(40, "is it the mirror?", user=HUMAN2)], selecting())
    assert [v[3] for v in fragment.values() if v[2] == "buffered"] == ["continuation"]
    # Later in the same burst, it is no new question for anyone.
    burst = last_verdicts([ROOM_ASK, say(70, "is it the mirror?", user=HUMAN2)], selecting())
    assert not [v for v in burst.values() if v[2] in ("buffered", "immediate")]


@pytest.mark.parametrize(
    "text",
    [
        "hi everyone",
        "good morning everybody!",
        "thanks everyone",
        "bye everyone",
        "ok everyone, standup at 3",
        "everyone please update your deps today",
        "the one who fixed it left",
    ],
)
def test_a_line_that_only_names_the_room_asks_it_nothing(text: str) -> None:
    # `everyone` or `who` makes a cue to the room, but a greeting, a thanks, an announcement
    # or a statement wants no agent chosen to answer it.
    found = last_verdicts([say(30, text, user=HUMAN2)], selecting())
    assert {v[1:] for v in found.values()} == {("must_not_respond", "tool_mailbox", "unaddressed")}


@pytest.mark.parametrize(
    "text", ["who broke the build", "anyone know how to pin a package", "anybody around", "hello?"]
)
def test_a_question_to_the_room_without_a_question_mark_or_with_no_words_is_offered(
    text: str,
) -> None:
    found = last_verdicts([say(30, text, user=HUMAN2)], selecting())
    assert sorted(v[3] for v in found.values()) == [
        "claimed_by_other",
        "claimed_by_other",
        "room_question",
    ]


def test_a_question_that_names_an_agent_or_continues_an_exchange_decides_as_before() -> None:
    named = last_verdicts([say(30, "worker-1, does apt hang for you?", user=HUMAN2)], selecting())
    assert named["worker-1"][3] == "named"
    assert (
        named["lead"][1:]
        == named["worker-2"][1:]
        == (
            "must_not_respond",
            "tool_mailbox",
            "addressed_to_other",
        )
    )
    exchange = [
        say(10, f"<@{LEAD}> how do I restart nginx?"),
        say(20, "<@U0ALICE> systemctl restart nginx", user=LEAD),
        say(70, "and how do I check it came back?"),
    ]
    partner = last_verdicts(exchange, selecting())
    assert partner["lead"][3] == "conversation_partner"
    assert partner["worker-1"][3] == "unaddressed"


def test_an_agents_question_to_the_room_is_never_offered() -> None:
    found = last_verdicts([say(30, "does anyone know why apt hangs?", user=W1)], selecting())
    assert found["lead"][3] == "agent_message" and found["worker-1"][3] == "own_message"
