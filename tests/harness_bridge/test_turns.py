"""Turn assembly on a virtual clock: fragments, edits, deletes, typing, preemption, knocks."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from core.clock import VirtualClock, format_time, parse_time
from harness_bridge.turns import TYPING_HELD, Assembler

START = parse_time("2026-01-01T00:00:00Z")


def params(
    n: int,
    text: str,
    *,
    mode: str = "buffered",
    author: str = "U0ALICE",
    supersedes: str | None = None,
    reason: str = "direct_message",
    priority: str = "normal",
    mentions: tuple[str, ...] = (),
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "eventId": f"slack:T0:D0LEAD:{n}",
        "conversation": {"id": "D0LEAD", "kind": "dm"},
        "author": {"id": author, "kind": "human"},
        "content": [{"type": "text", "text": text}],
        "attention": {"policy": "must_respond", "reason": reason, "priority": priority},
        "injection": {"mode": mode, "role": "user"},
        "target": {"mentions": list(mentions), "directedness": "to_me"},
    }
    if supersedes is not None:
        event["eventId"] += "~edit"
        event["supersedes"] = supersedes
    return event


def texts(turn_events: tuple[dict[str, Any], ...]) -> list[str]:
    return [e["content"][0]["text"] for e in turn_events]


def test_the_specs_five_fragments_in_three_seconds_become_one_turn() -> None:
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    lines = ["when someone types", "in", "pieces", "like this", "the agent should wait"]
    for n, line in enumerate(lines):
        assert assembler.deliver(params(n, line)) == []
        clock.advance(timedelta(milliseconds=750))
    # The last fragment came at 3.0 s; three quiet seconds later the turn starts.
    clock.set(START + timedelta(seconds=5.9))
    assert assembler.due() == []
    clock.set(START + timedelta(seconds=9))
    (turn,) = assembler.due()
    assert texts(turn.events) == lines
    assert turn.at == START + timedelta(seconds=6)
    assert turn.event_ids == [f"slack:T0:D0LEAD:{n}" for n in range(5)]
    assert assembler.due() == [] and assembler.next_due() is None


def test_an_edit_before_injection_yields_only_the_edited_text() -> None:
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    assembler.deliver(params(1, "can you chekc the deploy"))
    clock.advance(timedelta(seconds=1))
    assembler.deliver(params(1, "can you check the deploy", supersedes="slack:T0:D0LEAD:1"))
    clock.advance(timedelta(seconds=5))
    (turn,) = assembler.due()
    assert texts(turn.events) == ["can you check the deploy"]


def test_an_edit_takes_its_fragments_place_when_its_cancellation_came_first() -> None:
    """The host tells the cancellation (`superseded`) before it delivers the edit: the old
    words leave at once, and the edit still comes in their place, not after the next line."""
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    first = params(1, "so about the deploy")
    assembler.deliver(first)
    assembler.deliver(params(2, "and the migration"))
    assert assembler.cancel(first["eventId"], "superseded")
    assert not assembler.cancel(first["eventId"], "superseded")  # once
    assembler.deliver(params(1, "so about the prod deploy", supersedes=first["eventId"]))
    clock.advance(timedelta(seconds=5))
    (turn,) = assembler.due()
    assert texts(turn.events) == ["so about the prod deploy", "and the migration"]


def test_a_gathering_waits_for_the_edit_of_its_last_fragment() -> None:
    """The question before it is complete, but the last fragment is being edited: the turn
    waits the compose window, not the settle time, so the edit still joins it."""
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    assembler.deliver(params(1, "can you check the deploy?"))
    assembler.deliver(params(2, "and the"))
    assert assembler.cancel("slack:T0:D0LEAD:2", "superseded")
    clock.advance(timedelta(milliseconds=500))
    assert assembler.due() == []
    assembler.deliver(params(2, "and the migration?", supersedes="slack:T0:D0LEAD:2"))
    clock.advance(timedelta(seconds=5))
    (turn,) = assembler.due()
    assert texts(turn.events) == ["can you check the deploy?", "and the migration?"]


def test_a_fragment_superseded_by_an_edit_that_never_comes_is_no_turn() -> None:
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    assembler.deliver(params(1, "so about the deploy"))
    assert assembler.cancel("slack:T0:D0LEAD:1", "superseded")
    clock.advance(timedelta(seconds=60))
    assert assembler.due() == [] and assembler.next_due() is None


def test_an_edit_the_agent_is_not_to_answer_takes_the_old_words_out_of_the_turn() -> None:
    """Edited to name someone else, the message goes to the mailbox: its first words are not
    a turn any more, and neither is the edit."""
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    assembler.deliver(params(1, "@lead can you look at the build"))
    edit = params(1, "@backend can you look at the build", mode="tool_mailbox")
    edit["supersedes"] = "slack:T0:D0LEAD:1"
    assert assembler.deliver(edit) == []
    clock.advance(timedelta(seconds=60))
    assert assembler.due() == [] and assembler.next_due() is None


def test_an_edit_made_urgent_is_a_turn_at_once_not_a_fragment() -> None:
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    assembler.deliver(params(1, "so about prod"))
    clock.advance(timedelta(seconds=1))
    urgent = params(
        1, "prod is down", mode="immediate", priority="urgent", supersedes="slack:T0:D0LEAD:1"
    )
    (turn,) = assembler.deliver(urgent)
    assert (turn.mode, turn.preempt, texts(turn.events)) == ("immediate", True, ["prod is down"])
    assert turn.at == clock.now() and assembler.next_due() is None


def test_a_delete_before_injection_yields_no_turn() -> None:
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    assembler.deliver(params(1, "the password is hunter2"))
    assert assembler.cancel("slack:T0:D0LEAD:1")
    clock.advance(timedelta(seconds=60))
    assert assembler.due() == [] and assembler.next_due() is None


def test_typing_holds_the_turn_until_the_person_stops() -> None:
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    assembler.deliver(params(1, "so about the deploy"))
    until = format_time(START + timedelta(seconds=8))
    assembler.typing({"id": "D0LEAD", "kind": "dm"}, "U0ALICE", until)
    clock.set(START + timedelta(seconds=4))
    assert assembler.due() == []
    clock.set(START + timedelta(seconds=8))
    assert len(assembler.due()) == 1


def test_fragments_merge_for_at_most_thirty_seconds() -> None:
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    turns = []
    for n in range(20):
        turns += assembler.deliver(params(n, f"line {n}"))
        clock.advance(timedelta(seconds=2))
    assert len(turns) == 1 and len(turns[0].events) == 15


def test_two_people_get_two_turns() -> None:
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    assembler.deliver(params(1, "hi", author="U0ALICE"))
    assembler.deliver(params(2, "hello", author="U0BOB"))
    clock.advance(timedelta(seconds=5))
    assert [t.event_ids for t in assembler.due()] == [["slack:T0:D0LEAD:1"], ["slack:T0:D0LEAD:2"]]


def test_an_urgent_event_is_a_preempting_turn_at_once() -> None:
    assembler = Assembler(VirtualClock(START))
    (turn,) = assembler.deliver(params(1, "prod is down", mode="immediate", priority="urgent"))
    assert (turn.mode, turn.preempt) == ("immediate", True)
    (approval,) = assembler.deliver(params(2, "approved", mode="immediate", reason="approval"))
    assert approval.preempt is False


def test_a_knock_is_a_turn_and_the_mailbox_is_not() -> None:
    assembler = Assembler(VirtualClock(START))
    (knock,) = assembler.deliver(params(1, "", mode="notify"))
    assert knock.mode == "notify"
    assert assembler.deliver(params(2, "chatter", mode="tool_mailbox")) == []
    assert assembler.deliver(params(3, "own", mode="silent")) == []


def test_flush_closes_every_open_gathering() -> None:
    assembler = Assembler(VirtualClock(START))
    assembler.deliver(params(1, "one last thing"))
    (turn,) = assembler.flush()
    assert turn.at == START + timedelta(seconds=3)


def test_a_fragment_sent_ends_its_authors_typing_hold() -> None:
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    assembler.deliver(params(1, "so about the deploy"))
    assembler.typing(
        {"id": "D0LEAD", "kind": "dm"}, "U0ALICE", format_time(START + timedelta(seconds=20))
    )
    clock.set(START + timedelta(seconds=2))
    assembler.deliver(params(2, "is it green?"))
    clock.set(START + timedelta(seconds=5))
    (turn,) = assembler.due()
    assert len(turn.events) == 2


def test_a_complete_question_is_not_held_for_the_compose_window() -> None:
    lead = ("agent:lead",)
    complete = [
        params(1, "is the deploy green?"),
        params(2, "@lead please check the deploy logs.", mentions=lead),
        params(3, "@lead the build is red again!", mentions=lead),
    ]
    for fragment in complete:
        clock = VirtualClock(START)
        assembler = Assembler(clock)
        assembler.deliver(fragment)
        assert assembler.next_due() == START + timedelta(milliseconds=300)
        clock.set(START + timedelta(milliseconds=300))
        (turn,) = assembler.due()
        assert turn.event_ids == [fragment["eventId"]]
    unfinished = [
        params(4, "@lead can you", mentions=lead),
        params(5, "check the deploy logs."),  # a full sentence naming nobody: maybe more comes
        params(6, "@lead ok.", mentions=lead),
    ]
    for fragment in unfinished:
        assembler = Assembler(VirtualClock(START))
        assembler.deliver(fragment)
        assert assembler.next_due() == START + timedelta(seconds=3)


def test_a_complete_question_still_waits_while_its_author_types() -> None:
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    assembler.typing(
        {"id": "D0LEAD", "kind": "dm"}, "U0ALICE", format_time(START + timedelta(seconds=5))
    )
    assembler.deliver(params(1, "is it green?"))
    assembler.typing(
        {"id": "D0LEAD", "kind": "dm"}, "U0ALICE", format_time(START + timedelta(seconds=5))
    )
    clock.set(START + timedelta(seconds=1))
    assert assembler.due() == []
    clock.set(START + timedelta(seconds=5))
    assert len(assembler.due()) == 1


def test_a_complete_question_in_the_compact_form_is_not_held_either() -> None:
    """The compact `chat/deliver` (what the built-in harness gets) carries its text as one
    string, not parts: a question there settles in 300 ms too, not the compose window."""
    compact = params(1, "@lead what is 2 + 2?", mentions=("agent:lead",))
    compact["content"] = "@lead what is 2 + 2?"
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    assembler.deliver(compact)
    assert assembler.next_due() == START + timedelta(milliseconds=300)


def test_typing_that_never_became_a_message_is_forgotten() -> None:
    """A thousand people type and never post: their holds pass, and go."""
    clock = VirtualClock(START)
    assembler = Assembler(clock)
    place = {"id": "C0GEN", "kind": "channel"}
    for n in range(1000):
        assembler.typing(place, f"U{n}", format_time(clock.now() + timedelta(seconds=5)))
        clock.advance(timedelta(seconds=1))
    assert len(assembler._typing) <= TYPING_HELD
    assert assembler.next_due() is None
