"""The harness's inbox on its own: a repeat is refused, a cancellation that comes first is
kept, and only the newest entries are held."""

from __future__ import annotations

from typing import Any

from harness_bridge.mailbox import Mailbox


def delivery(event_id: str, attempt: int = 1) -> dict[str, Any]:
    return {"eventId": event_id, "reliability": {"attempt": attempt}}


def test_a_repeat_is_not_stored_twice() -> None:
    mailbox = Mailbox()
    assert mailbox.store(delivery("e1"))
    assert not mailbox.store(delivery("e1", attempt=2))
    assert [(e.event_id, e.attempt) for e in mailbox.entries()] == [("e1", 1)]


def test_a_cancellation_before_its_delivery_makes_the_delivery_a_repeat() -> None:
    mailbox = Mailbox()
    assert mailbox.cancel("e1", "deleted")
    assert not mailbox.cancel("e1", "deleted")
    assert not mailbox.store(delivery("e1"))
    assert mailbox.entries() == []
    assert mailbox.store(delivery("e2")) and mailbox.cancel("e2", "superseded")
    assert [(e.event_id, e.cancelled) for e in mailbox.entries()] == [("e2", "superseded")]


def test_only_the_newest_entries_are_held() -> None:
    """A harness that runs for months does not keep every event it was told; what the host
    could still send again (a retry, within its delivery window) is among the newest."""
    mailbox = Mailbox(kept=3)
    for n in range(5):
        assert mailbox.store(delivery(f"e{n}"))
    assert [e.event_id for e in mailbox.entries()] == ["e2", "e3", "e4"]
    assert not mailbox.store(delivery("e4", attempt=2))
