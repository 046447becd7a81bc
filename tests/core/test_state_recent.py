"""The engine's per-conversation state is bounded (`core.state_recent`): with a tiny bound, a
conversation evicted is decided as one the host never saw and one still held as before; a
thread an agent owns outlives the bound of the others, and has one of its own."""

from __future__ import annotations

import pytest
from builders import (
    HUMAN,
    HUMAN2,
    LEAD,
    W1,
    axes,
    delivered,
    flat_at,
    flat_joined,
    flat_say,
    line,
    run,
    slack_body,
    slack_message,
)

import core.continuity
import core.state
from core.state_recent import Recent

ASKED = [
    flat_say(10, f"<@{LEAD}> how do I restart nginx?"),
    flat_say(20, "sudo systemctl restart nginx", user=LEAD),
]


def say(
    second: int, text: str, *, user: str = HUMAN, channel: str = "C0GEN", thread: int = 0
) -> str:
    """A trace line in `channel`, in the thread of the message at second `thread` if given."""
    thread_ts = f"{1767225600 + thread}.000100" if thread else None
    message = slack_message(
        f"{1767225600 + second}.000100", text, user=user, channel=channel, thread_ts=thread_ts
    )
    return line(flat_at(second), "slack", slack_body(message))


def last(lines: list[str], agent: str) -> tuple[str, ...]:
    """The last decision for `agent`: its axes and its reason."""
    records, _, _ = run(flat_joined() + lines)
    params = delivered(records)[agent][-1]
    return (*axes(params), params["attention"]["reason"])


def test_a_recent_map_evicts_the_least_recently_written_and_keeps_what_it_spares() -> None:
    recent: Recent[str, int] = Recent(2, spare=lambda value: value < 0)
    recent.hold("a", 1)
    recent.hold("b", 2)
    recent.hold("a", 1)  # written again: now the newest
    recent.hold("c", 3)
    assert list(recent.items()) == [("a", 1), ("c", 3)]
    recent.hold("d", -4)
    recent.hold("e", 5)
    recent.hold("f", 6)
    assert list(recent) == ["e", "f"]
    assert recent.held("d") == -4 and recent.held("a") is None
    recent.hold("d", -4)  # spared, written again: held in order again
    assert list(recent) == ["f", "d"] and not recent.spared


def test_an_evicted_channel_continues_no_exchange_and_a_held_one_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    elsewhere = say(30, "anyone seen the build?", channel="C0OPS")
    follow = flat_say(80, "it says unit not found")
    monkeypatch.setattr(core.continuity, "CONVERSATIONS_HELD", 2)
    assert last(ASKED + [elsewhere, follow], "lead")[3] == "conversation_partner"
    monkeypatch.setattr(core.continuity, "CONVERSATIONS_HELD", 1)
    evicted = last(ASKED + [elsewhere, follow], "lead")
    assert evicted == last([elsewhere, follow], "lead")
    assert evicted[3] == "unaddressed"


def test_an_evicted_thread_has_no_followers_and_a_held_one_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = say(1, "the deploy is failing again")
    joined = say(2, "looking at it", user=W1, thread=1)
    other = [say(3, "lunch plans"), say(4, "pizza", user=HUMAN2, thread=3)]
    reply = say(5, "it fails on the migration step", thread=1)
    held = last([root, joined, *other, reply], "worker-1")
    assert held[3] == "direct_thread_question"
    monkeypatch.setattr(core.state, "THREADS_HELD", 1)
    evicted = last([root, joined, *other, reply], "worker-1")
    assert evicted == last([root, *other, reply], "worker-1")
    assert evicted != held


def test_what_a_recent_map_spares_is_bounded_too() -> None:
    recent: Recent[str, int] = Recent(1, spare=lambda value: value < 0, spared_limit=2)
    for key, value in (("a", -1), ("b", -2), ("c", -3), ("d", 4)):
        recent.hold(key, value)
    assert list(recent.spared) == ["b", "c"] and recent.held("a") is None
    recent.hold("b", -2)  # written again: the newest, so "c" is now the oldest spared
    recent.hold("e", 5)
    assert list(recent.spared) == ["c", "b"]


def test_a_thread_an_agent_owns_outlives_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    root = say(1, "deploying the api now", user=LEAD)
    asked = say(2, "is the migration included?", thread=1)
    other = [say(3, "lunch plans"), say(4, "pizza", user=HUMAN2, thread=3)]
    again = say(5, "and the cache flush?", thread=1)
    held = last([root, asked, *other, again], "lead")
    monkeypatch.setattr(core.state, "THREADS_HELD", 1)
    assert last([root, asked, *other, again], "lead") == held
    assert held[3] != "unaddressed"


def test_the_owned_thread_posted_in_least_lately_is_forgotten_past_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past `OWNED_THREADS_HELD`, a reply in the owned thread whose last post is oldest is
    decided as in a thread the agent does not own (with its root gone, one nobody posted in)."""
    root = say(1, "deploying the api now", user=LEAD)
    asked = say(2, "is the migration included?", thread=1)
    others = [
        say(3, "rotating the keys", user=LEAD),
        say(4, "which ones?", thread=3),
        say(5, "lunch plans"),
        say(6, "pizza", user=HUMAN2, thread=5),
    ]
    again = say(7, "and the cache flush?", thread=1)
    monkeypatch.setattr(core.state, "THREADS_HELD", 1)
    monkeypatch.setattr(core.state, "CHAINS_HELD", 1)  # no run of fragments carries it
    monkeypatch.setattr(core.state, "MESSAGES_HELD", 2)  # the root is gone by the reply
    held = last([root, asked, *others, again], "lead")
    assert held[3] != "unaddressed"
    monkeypatch.setattr(core.state, "OWNED_THREADS_HELD", 1)
    forgotten = last([root, asked, *others, again], "lead")
    assert forgotten != held
    assert forgotten == last([*others, again], "lead")


def test_an_evicted_run_of_fragments_is_not_continued_and_a_held_one_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines = [
        flat_say(1, f"<@{LEAD}> can you"),
        flat_say(2, f"<@{LEAD}> the build is red", user=HUMAN2),
        flat_say(3, "check the deploy logs"),
    ]
    assert last(lines, "lead")[3] == "continuation"
    monkeypatch.setattr(core.state, "CHAINS_HELD", 1)
    assert last(lines, "lead")[3] != "continuation"
