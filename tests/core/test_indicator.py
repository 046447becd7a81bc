"""The working indicator's actions, as core builds them for the agent port: one per event the
turn may answer, keyed so a retry queues nothing twice, its words only while it shows."""

from __future__ import annotations

from core.actions import WORKING_TIMEOUT_S, Working
from core.agent_port import TurnEvent
from core.decision import Policy
from core.indicator import STATUS_TEXT, progress_actions, working_actions


def turn_event(event_id: str, policy: Policy) -> TurnEvent:
    return TurnEvent(
        event_id=event_id,
        platform="toy",
        conversation="room",
        conversation_kind="channel",
        policy=policy,
        thread="t1",
        message_id="m1",
    )


EVENTS = [turn_event(f"e-{p.value}", p) for p in Policy]


def test_only_the_events_a_turn_may_answer_show_it() -> None:
    shown = working_actions("lead", EVENTS, on=True)
    assert [a.in_reply_to for a in shown] == ["e-must_respond", "e-may_respond"]
    assert shown[0] == Working(
        agent="lead",
        platform="toy",
        conversation="room",
        key="e-must_respond:lead:working:on",
        on=True,
        status=STATUS_TEXT,
        thread="t1",
        in_reply_to="e-must_respond",
        message_id="m1",
        conversation_kind="channel",
        timeout_s=WORKING_TIMEOUT_S,
    )


def test_clearing_has_no_words_and_its_own_key() -> None:
    (cleared,) = working_actions("lead", EVENTS[:1], on=False)
    assert (cleared.on, cleared.status, cleared.key) == (
        False,
        "",
        "e-must_respond:lead:working:off",
    )


def test_each_progress_step_is_its_own_action_saying_on_what() -> None:
    first, second = (progress_actions("lead", EVENTS[:1], "reading", s)[0] for s in ("a", "b"))
    assert first.status == f"{STATUS_TEXT} (reading)" and first.on
    assert (first.key, second.key) == (
        "e-must_respond:lead:working:progress:a",
        "e-must_respond:lead:working:progress:b",
    )
    assert progress_actions("lead", EVENTS[:1], "", "c")[0].status == STATUS_TEXT
