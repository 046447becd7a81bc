"""Conversation continuity in a flat channel (`core.continuity`): the agent's partner and the
answers to its own line are `to_me_likely`, a burst starts one turn, closings are no turn."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from builders import (
    HUMAN,
    HUMAN2,
    LEAD,
    LOCAL,
    W1,
    axes,
    delivered,
    local_workspace,
    run,
)
from builders import (
    flat_joined as joined,
)
from builders import (
    flat_say as say,
)

import core.state
from c2a.platforms import installed
from core.manifest import Workspace, parse_manifest


@pytest.fixture
def rules_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core.state, "default_scorer", lambda: None)


def last(lines: list[str], agent: str = "lead") -> dict[str, Any]:
    records, _, _ = run(joined() + lines)
    return delivered(records)[agent][-1]


def verdict(params: dict[str, Any]) -> tuple[str, str, str, str]:
    return (*axes(params), params["attention"]["reason"])


ASKED = [
    say(10, f"<@{LEAD}> how do I restart nginx?"),
    say(20, "sudo systemctl restart nginx", user=LEAD),
]


def test_the_partner_answering_without_a_name_is_likely_for_the_agent_alone() -> None:
    records, _, _ = run(joined() + ASKED + [say(80, "it says unit not found")])
    lead, worker = delivered(records)["lead"][-1], delivered(records)["worker-1"][-1]
    assert verdict(lead) == ("to_me_likely", "may_respond", "buffered", "conversation_partner")
    assert verdict(worker) == ("ambient", "must_not_respond", "tool_mailbox", "unaddressed")


def test_before_the_agent_answers_there_is_no_conversation_yet() -> None:
    lines = [say(10, f"<@{LEAD}> can you"), say(60, "anyway, lunch?")]
    assert verdict(last(lines))[:3] == ("ambient", "must_not_respond", "tool_mailbox")


def test_the_exchange_ends_after_the_window_in_lines() -> None:
    chatter = [say(30 + i, f"unrelated line {i}", user=HUMAN2) for i in range(12)]
    lines = ASKED + chatter + [say(80, "it says unit not found")]
    assert verdict(last(lines))[3] == "unaddressed"


# Past the exchange, a statement is the learned scorer's to take (`room_statement`, in
# test_scorer.py): continuity's own rule is seen without it.
@pytest.mark.usefixtures("rules_only")
def test_the_exchange_ends_after_a_quiet_spell() -> None:
    lines = ASKED + [say(3600, "it says unit not found")]
    assert verdict(last(lines))[3] == "unaddressed"


@pytest.mark.usefixtures("rules_only")
def test_a_partner_who_turned_to_someone_else_is_not_likely() -> None:
    lines = ASKED + [say(40, f"<@{HUMAN2}> did you ever see that?"), say(50, "it was on 22.04")]
    assert verdict(last(lines))[3] == "unaddressed"


def test_a_partner_who_turns_to_another_agent_by_name_leaves_the_line_to_it() -> None:
    """The lead's partner asks worker-1 by name: worker-1 must answer it, and the lead's
    exchange gives the lead no turn (that turn's claim once took the line from worker-1)."""
    data = yaml.safe_load(LOCAL.read_text())
    data["agents"]["worker-1"]["names"] = ["worker-1"]
    workspace = Workspace.from_manifest(parse_manifest(data, platforms=installed()), installed())
    asked = say(40, "@Worker-1 can you check the logs?")
    records, _, _ = run(joined() + ASKED + [asked], workspace)
    lead, worker = delivered(records)["lead"][-1], delivered(records)["worker-1"][-1]
    assert verdict(worker) == ("to_me", "must_respond", "buffered", "named")
    assert verdict(lead) == ("to_other", "must_not_respond", "tool_mailbox", "addressed_to_other")


def test_an_answer_to_the_agents_line_to_the_room_is_likely() -> None:
    lines = [say(10, "has anyone seen the flaky clock test?", user=LEAD)]
    lines.append(say(20, "yes, it fails at midnight", user=HUMAN2))
    assert verdict(last(lines)) == ("to_me_likely", "may_respond", "buffered", "answer_to_my_line")


def test_a_line_long_after_the_agents_room_line_is_chatter() -> None:
    lines = [say(10, "has anyone seen the flaky clock test?", user=LEAD)]
    lines += [say(11 + i, f"other talk {i}", user=HUMAN) for i in range(3)]
    lines.append(say(20, "yes, it fails at midnight", user=HUMAN2))
    assert verdict(last(lines))[3] == "unaddressed"


def test_only_the_line_right_after_the_agents_room_line_answers_it() -> None:
    lines = [say(10, "has anyone seen the flaky clock test?", user=LEAD)]
    lines += [say(11, "lunch?", user=HUMAN), say(20, "yes, it fails at midnight", user=HUMAN2)]
    assert verdict(last(lines))[3] == "unaddressed"


def test_a_partner_the_agent_answered_to_the_room_stays_a_partner_past_that_line() -> None:
    chatter = [say(82 + i, f"other talk {i}", user=HUMAN2) for i in range(3)]
    lines = ASKED + chatter + [say(88, "it says unit not found")]
    assert verdict(last(lines))[3] == "conversation_partner"


def test_a_burst_starts_one_turn_its_next_lines_go_to_the_mailbox() -> None:
    lines = ASKED + [say(80, "it says unit not found"), say(90, "on ubuntu 22.04")]
    records, _, _ = run(joined() + lines)
    lead = delivered(records)["lead"]
    assert [verdict(p)[2:] for p in lead[-2:]] == [
        ("buffered", "conversation_partner"),
        ("tool_mailbox", "same_burst"),
    ]
    turns = [r for r in records if r["agent"] == "lead" and "turn" in r]
    assert len([t for t in turns if t["turn"]["mode"] == "buffered"]) == 2  # the mention, the burst


def test_a_closing_from_the_partner_is_no_turn() -> None:
    lines = ASKED + [say(80, "thanks, that fixed it")]
    assert verdict(last(lines)) == ("to_me_likely", "must_not_respond", "tool_mailbox", "thanks")


def test_a_backchannel_or_short_acknowledgement_from_the_partner_is_no_turn() -> None:
    for text in ("yeah", "hmm, right", "ok i try", "okay very kool thanks"):
        lines = ASKED + [say(80, text)]
        assert verdict(last(lines)) == (
            "to_me_likely",
            "must_not_respond",
            "tool_mailbox",
            "thanks",
        ), text


def test_a_partners_short_question_is_still_a_turn() -> None:
    for text in ("ok, and then?", "ok so what now", "yes"):
        lines = ASKED + [say(80, text)]
        assert verdict(last(lines))[1:3] == ("may_respond", "buffered"), text


def test_a_closing_with_words_addressed_to_the_agent_is_an_acknowledgement() -> None:
    for text in ("ok I'll try that", "got it, thanks", "thanks, that worked", "ok it works now"):
        lines = ASKED[:1] + [say(20, f"<@{LEAD}> {text}")]
        assert verdict(last(lines))[1:] == ("ack_only", "notify", "thanks"), text


def test_an_agents_own_chatter_and_other_agents_are_never_likely() -> None:
    lines = ASKED + [say(40, "it says unit not found", user=W1)]
    assert verdict(last(lines))[0] == "to_other"


def test_a_fragment_joins_its_questions_turn_and_costs_no_budget_of_its_own() -> None:
    # One turn an hour: the question takes it; its next fragment (rule 6) joins that turn
    # instead of being queued as over budget, and a second question is over budget.
    workspace = local_workspace(budget={"turns": 1, "window_s": 3600})
    lines = [say(10, f"<@{LEAD}> can you"), say(15, "check the deploy logs")]
    lines += [say(120, f"<@{LEAD}> and the other one?")]
    records, _, _ = run(joined() + lines, workspace)
    reasons = [p["attention"]["reason"] for p in delivered(records)["lead"][-3:]]
    assert reasons == ["direct_mention", "continuation", "over_budget"]


COMMANDED = [say(10, "!paste"), say(12, "paste your logs at paste.example", user=LEAD)]
COMMANDED += [say(20 + i, f"unrelated line {i}", user=HUMAN2) for i in range(3)]


def test_a_command_goes_to_the_agent_that_answers_commands() -> None:
    records, _, _ = run(joined() + COMMANDED + [say(90, "!info nginx | bob")])
    lead, worker = delivered(records)["lead"][-1], delivered(records)["worker-1"][-1]
    assert verdict(lead) == ("to_me_likely", "may_respond", "buffered", "command")
    assert verdict(worker)[3] == "unaddressed"


def test_a_command_is_chatter_in_a_channel_where_no_agent_answers_them() -> None:
    assert verdict(last([say(10, "!paste")]))[3] == "unaddressed"
    lines = [say(10, "!paste"), say(12, "unrelated", user=HUMAN2), say(13, "hi", user=HUMAN2)]
    lines += [say(14, "hello", user=LEAD), *COMMANDED[2:], say(40, "!info nginx")]
    assert verdict(last(lines))[3] == "unaddressed"  # the lead spoke, but not to the command


def test_an_agent_that_stops_answering_commands_stops_getting_them() -> None:
    ignored = [say(30 + 10 * i, f"!factoid{i}", user=HUMAN2) for i in range(4)]
    lines = COMMANDED + ignored + [say(90, "!info nginx", user=HUMAN2)]
    assert verdict(last(lines))[3] == "unaddressed"
