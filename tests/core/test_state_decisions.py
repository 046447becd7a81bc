"""A message record keeps each agent's decision whole, sharing the event's id and one interned
copy of its strings, whether the decision was made in this process or read back from the
ledger."""

from __future__ import annotations

from dataclasses import fields
from sys import intern

from builders import local_workspace

from core.clock import parse_time
from core.decision import Decision, Directedness, InjectionMode, Policy, Priority
from core.events import Author, ChatEvent, Conversation, ConversationKind, EventKind
from core.state import State

CHANNEL = Conversation("C1", ConversationKind.CHANNEL)
AT = parse_time("2026-01-01T00:00:00Z")
MESSAGE = EventKind.MESSAGE
EVENT = ChatEvent("slack:T1:C1:1.000100", MESSAGE, "slack", "T1", CHANNEL, Author("U1"), AT, "1.0")


def _read_back() -> Decision:
    """A decision with every field away from its default, its strings copies of their own as
    a row read from the ledger gives them."""
    return Decision(
        event_id="".join(["slack:T1:C1:", "1.000100"]),
        agent="".join(["wor", "ker-1"]),
        directedness=Directedness.TO_ME,
        policy=Policy.MAY_RESPOND,
        mode=InjectionMode.BUFFERED,
        reason="".join(["direct_", "mention"]),
        priority=Priority.HIGH,
        deadline_ms=1500,
        claimed_by="lead",
        continues="slack:T1:C1:0.000100",
        supersedes="slack:T1:C1:1.000100~2",
    )


def test_the_test_decision_sets_every_field() -> None:
    """A field added to `Decision` must be set here, so the record's copy is checked for it."""
    default = Decision("e", "a", Directedness.AMBIENT, Policy.ACK_ONLY, InjectionMode.SILENT, "r")
    decision = _read_back()
    assert all(getattr(decision, f.name) != getattr(default, f.name) for f in fields(Decision))


def test_a_decision_read_back_is_kept_whole_with_the_events_strings() -> None:
    state = State(local_workspace())
    decision = _read_back()
    state.apply(EVENT, [decision])
    record = state.target(EVENT)
    assert record is not None
    kept = record.delivered["worker-1"]
    assert kept == decision
    assert kept.event_id is EVENT.event_id
    assert kept.agent is intern("worker-1")  # one copy for every record
    assert kept.reason is intern("direct_mention")


def test_a_decision_made_from_the_event_is_kept_as_it_is() -> None:
    state = State(local_workspace())
    decision = Decision(
        EVENT.event_id,
        "lead",
        Directedness.TO_ME,
        Policy.MUST_RESPOND,
        InjectionMode.IMMEDIATE,
        "r",
    )
    state.apply(EVENT, [decision])
    record = state.target(EVENT)
    assert record is not None
    assert record.delivered["lead"] is decision
