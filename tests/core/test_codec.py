"""An event read back from the ledger's JSON is the event written, for every kind of event,
conversation and author, and a kind no version wrote is refused as the enum refuses it."""

from __future__ import annotations

from typing import Any

import pytest

from core.codec import event_from_data, event_to_data
from core.events import AuthorKind, ConversationKind, EventKind, Mentions


def _data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "event_id": "slack:T1:C1:1.000100",
        "kind": "message",
        "platform": "slack",
        "workspace_id": "T1",
        "conversation": {"id": "C1", "kind": "channel"},
        "author": {"id": "U1", "kind": "human"},
        "created_at": "2026-01-01T00:00:00.000100+00:00",
        "text": "hello",
    }
    data.update(changes)
    return data


@pytest.mark.parametrize("kind", list(EventKind))
def test_every_event_kind_round_trips(kind: EventKind) -> None:
    data = _data(kind=str(kind))
    event = event_from_data(data)
    assert event.kind is kind
    assert event_to_data(event) == data


@pytest.mark.parametrize("kind", list(ConversationKind))
def test_every_conversation_kind_round_trips(kind: ConversationKind) -> None:
    data = _data(conversation={"id": "C1", "kind": str(kind), "thread_id": "1.0", "group": True})
    assert event_from_data(data).conversation.kind is kind
    assert event_to_data(event_from_data(data)) == data


@pytest.mark.parametrize("kind", list(AuthorKind))
def test_every_author_kind_round_trips(kind: AuthorKind) -> None:
    data = _data(author={"id": "U1", "kind": str(kind), "display_name": "Al", "external": True})
    assert event_from_data(data).author.kind is kind
    assert event_to_data(event_from_data(data)) == data


def test_mentions_and_attachments_round_trip_and_their_absence_reads_empty() -> None:
    mentions = {"users": ["U2"], "roles": ["S1"], "broadcast": ["here"]}
    data = _data(mentions=mentions, attachments=[{"id": "F1", "name": "a.txt"}], files=1)
    assert event_to_data(event_from_data(data)) == data
    bare = event_from_data(_data())
    assert bare.mentions == Mentions()
    assert not bare.mentions
    assert bare.attachments == ()


@pytest.mark.parametrize(
    "changes",
    [
        {"kind": "poll"},
        {"conversation": {"id": "C1", "kind": "forum"}},
        {"author": {"id": "U1", "kind": "robot"}},
    ],
)
def test_a_kind_no_version_wrote_is_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="is not a valid"):
        event_from_data(_data(**changes))


def test_an_events_parts_stay_hashable_values() -> None:
    event = event_from_data(_data(mentions={"users": ["U2"], "roles": [], "broadcast": []}))
    again = event_from_data(_data(mentions={"users": ["U2"], "roles": [], "broadcast": []}))
    assert {event.conversation, event.author, event.mentions} == {
        again.conversation,
        again.author,
        again.mentions,
    }
