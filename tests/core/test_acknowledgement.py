"""The fast acknowledgement, called with plain values: which signal a decided message gets
before its agent says a word, and none where it gets none."""

from __future__ import annotations

from dataclasses import replace

import pytest
from builders import local_workspace

from core.acknowledgement import acknowledgement
from core.clock import parse_time
from core.decision import Decision, Directedness, InjectionMode, Policy
from core.events import Author, ChatEvent, Conversation, ConversationKind, EventKind
from core.signals import Signal

AT = parse_time("2026-01-01T00:00:00Z")
CHANNEL = Conversation("C1", ConversationKind.CHANNEL)
EVENT = ChatEvent("E1", EventKind.MESSAGE, "slack", "T1", CHANNEL, Author("U1"), AT, "1.0")
GLYPHS = local_workspace().glyphs


def decided(
    policy: Policy = Policy.MUST_RESPOND,
    mode: InjectionMode = InjectionMode.IMMEDIATE,
    reason: str = "direct_mention",
) -> Decision:
    return Decision("E1", "lead", Directedness.TO_ME, policy, mode, reason)


@pytest.mark.parametrize(
    ("decision", "down", "signal"),
    [
        (decided(), False, Signal.SEEN),
        (decided(), True, Signal.BLOCKED),
        (decided(reason="over_budget"), False, Signal.QUEUED),
        (decided(reason="over_budget"), True, Signal.BLOCKED),
    ],
)
def test_a_must_respond_message_gets_the_signal_for_its_agents_state(
    decision: Decision, down: bool, signal: Signal
) -> None:
    action = acknowledgement(EVENT, decision, GLYPHS, down=down, seen=True)
    assert action is not None
    assert action.signal is signal
    assert action.emoji == GLYPHS.native("slack", signal)
    assert action.key == f"E1:lead:react:{signal.value}"
    assert (action.agent, action.conversation, action.message_id) == ("lead", "C1", "1.0")


@pytest.mark.parametrize("down", [False, True])
def test_a_message_for_a_muted_agent_is_declined_and_one_for_another_is_not(down: bool) -> None:
    muted = Decision(
        "E1",
        "lead",
        Directedness.TO_ME,
        Policy.MUST_NOT_RESPOND,
        InjectionMode.TOOL_MAILBOX,
        "muted",
    )
    action = acknowledgement(EVENT, muted, GLYPHS, down=down, seen=False)
    assert action is not None and action.signal is Signal.DECLINED
    elsewhere = replace(muted, directedness=Directedness.TO_OTHER)
    assert acknowledgement(EVENT, elsewhere, GLYPHS, down=down, seen=True) is None


def test_seen_only_where_a_turn_will_take_it_and_the_workspace_wants_it() -> None:
    assert acknowledgement(EVENT, decided(), GLYPHS, down=False, seen=False) is None
    notified = decided(mode=InjectionMode.NOTIFY)
    assert acknowledgement(EVENT, notified, GLYPHS, down=False, seen=True) is None


@pytest.mark.parametrize(
    ("event", "decision"),
    [
        (EVENT, decided(policy=Policy.MAY_RESPOND)),
        (EVENT, decided(policy=Policy.ACK_ONLY)),
        (replace(EVENT, kind=EventKind.EDIT), decided()),
        (replace(EVENT, message_id=None), decided()),
    ],
)
def test_nothing_but_a_must_respond_message_with_an_id_is_acknowledged(
    event: ChatEvent, decision: Decision
) -> None:
    assert acknowledgement(event, decision, GLYPHS, down=True, seen=True) is None


def test_the_responder_the_host_picked_for_a_role_acknowledges_and_no_other_does() -> None:
    """`@backend`: the worker given the claim owes the answer, so the person sees its 👀 at
    once; another candidate, and one claimed by no one, get nothing."""
    picked = replace(
        decided(policy=Policy.MAY_RESPOND, mode=InjectionMode.BUFFERED, reason="role_mention"),
        directedness=Directedness.TO_MY_ROLE,
        claimed_by="lead",
    )
    action = acknowledgement(EVENT, picked, GLYPHS, down=False, seen=True)
    assert action is not None and action.signal is Signal.SEEN
    for other in (replace(picked, claimed_by="worker-1"), replace(picked, claimed_by=None)):
        assert acknowledgement(EVENT, other, GLYPHS, down=False, seen=True) is None
