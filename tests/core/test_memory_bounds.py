"""What the engine's memory (`core.state`) keeps grows with recent traffic only: a host that runs
for months lets go of what no decision reads any more, and decides what is recent as before."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from builders import (
    D_HUMAN,
    GUILD,
    HUMAN,
    LEAD,
    START,
    W1,
    W2,
    discord_dispatch,
    discord_message,
    local_workspace,
    slack_body,
    slack_join,
    slack_message,
    swept,
    took,
)

import core.continuity
import core.state
from adapters.discord.normalise import normalise as discord_normalise
from core.clock import parse_time
from core.events import ChatEvent, ConversationKind
from core.state import State

BASE = int(START.timestamp())
JOINED = [slack_body(slack_join(user)) for user in (LEAD, W1, W2)]


def asked(second: int, person: str, text: str = "how do I restart nginx?") -> dict[str, object]:
    """A person's question to the lead in #general, `second`s after `START`."""
    return slack_body(slack_message(f"{BASE + second}.000100", f"<@{LEAD}> {text}", user=person))


def test_a_person_with_no_turns_left_in_the_window_is_let_go_of() -> None:
    state = State(local_workspace())
    at, hour = parse_time("2026-01-01T00:00:00Z"), timedelta(hours=1)
    state.note_turn("lead", "U0ALICE", at)
    assert state.open_turns("lead", "U0ALICE", at + hour / 2, hour) == 1
    assert state.open_turns("lead", "U0ALICE", at + hour, hour) == 0
    assert ("lead", "U0ALICE") not in state.turns


def test_turns_keep_the_people_who_asked_within_two_windows_only() -> None:
    """One new person an hour for two days (the budget's window is an hour): the pairs whose
    last turn is two windows old are let go of, and a person's turns in the window still count."""

    async def scenario() -> None:
        bodies = [asked(3600 * hour, f"U0P{hour:04d}") for hour in range(48)]
        engine, _ = await took(JOINED + bodies)
        kept = {person for _, person in engine.state.turns}
        assert len(kept) <= 3 and "U0P0047" in kept and "U0P0000" not in kept

    asyncio.run(scenario())


def test_runs_of_agents_lines_are_kept_for_the_conversations_posted_in_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An agent answering last in one thread after another: only the `STREAKS_HELD` threads it
    posted in last keep their run (and its count), not every thread it ever answered."""
    monkeypatch.setattr(core.state, "STREAKS_HELD", 2)

    def answer(second: int, thread: int) -> dict[str, object]:
        ts, root = f"{BASE + second}.000100", f"{BASE + thread}.000100"
        return slack_body(slack_message(ts, "done", user=LEAD, thread_ts=root))

    async def scenario() -> None:
        bodies = [answer(10 + thread, thread) for thread in range(1, 6)] + [answer(20, 5)]
        engine, _ = await took(JOINED + bodies)
        threads = [key.rsplit("/", 1)[-1] for key in engine.state.streaks]
        assert threads == [f"{BASE + 4}.000100", f"{BASE + 5}.000100"]
        assert list(engine.state.streaks.values()) == [1, 2]

    asyncio.run(scenario())


def test_expired_claims_are_let_go_of_at_the_sweep_and_when_read() -> None:
    """A claim expired holds nothing: the sweep lets it go, reading it lets it go, and one
    still held stays and keeps its holder."""

    async def scenario() -> None:
        bodies = [asked(second, HUMAN) for second in (1, 2, 3)]
        engine, clock = await took(JOINED + bodies)
        first, second, third = (f"slack:T0LOCAL:C0GEN:{BASE + s}.000100" for s in (1, 2, 3))
        async with engine.store.transaction():
            await engine.claim("lead", first)
            await engine.claim("worker-1", second)
        clock.advance(timedelta(minutes=11))  # past the claim's ten minutes
        async with engine.store.transaction():
            await engine.claim("worker-2", third)
        assert engine.state.claim_holder(first, clock.now()) is None
        assert set(engine.state.claims) == {second, third}
        await swept(engine)
        assert set(engine.state.claims) == {third}
        assert engine.state.claim_holder(third, clock.now()) == "worker-2"

    asyncio.run(scenario())


def test_threads_that_are_channels_are_kept_for_those_made_or_posted_in_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the bound, a thread that is a channel of its own, neither made nor posted in lately,
    is forgotten: a post in it is read as in a channel, one in a thread kept as in a thread."""
    monkeypatch.setattr(core.state, "THREADS_HELD", 1)
    monkeypatch.setattr(core.state, "OWNED_THREADS_HELD", 1)
    state = State(local_workspace())

    def created(thread: str) -> ChatEvent:
        d = {"id": thread, "guild_id": GUILD, "parent_id": "820000000000000001", "type": 11}
        d |= {"owner_id": D_HUMAN, "name": "a question"}
        event = discord_normalise(discord_dispatch("THREAD_CREATE", d))
        assert event is not None
        return event

    def posted(thread: str, second: int) -> ChatEvent:
        event = discord_normalise(
            discord_message(f"12400000000000000{second:02d}", "hi", channel=thread)
        )
        assert event is not None
        return state.resolve(event)

    first, second, third = "830000000000000001", "830000000000000002", "830000000000000003"
    state.apply(created(first), [])
    state.apply(created(second), [])
    state.apply(posted(first, 1), [])  # posted in: now newer than the second
    state.apply(created(third), [])
    assert list(state.thread_channels) == [first, third]
    assert posted(first, 2).conversation.kind is ConversationKind.THREAD
    assert posted(second, 3).conversation.kind is ConversationKind.CHANNEL


def test_a_channel_keeps_what_it_knows_of_the_people_of_its_recent_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new person a line, and the lead answering some: past `PEOPLE_LINES` lines since a
    person last spoke or was spoken to, the channel keeps nothing of them; the lead's partner
    of the last lines keeps the exchange, and is still its partner."""
    monkeypatch.setattr(core.continuity, "PEOPLE_LINES", 4)

    def said(second: int, text: str, user: str) -> dict[str, object]:
        return slack_body(slack_message(f"{BASE + second}.000100", text, user=user))

    async def scenario() -> None:
        bodies = [
            said(second, "anyone seen the build?", f"U0P{second:04d}") for second in range(1, 9)
        ]
        bodies += [
            said(10, "<@U0P0008> it is green again", LEAD),
            said(11, "lunch anyone?", "U0P0011"),
            said(12, "the deploy still fails", "U0P0008"),
        ]
        engine, _ = await took(JOINED + bodies)
        (talk,) = engine.state.continuity.talks.values()
        kept = {"U0P0008", "U0P0011"}
        assert set(talk.first) == set(talk.bursts) == set(talk.seen) == kept
        assert set(talk.asked) <= kept
        assert list(talk.exchanges) == [("lead", "U0P0008")] and talk.people == {"U0P0008"}
        decided = await engine.store.deliveries(f"slack:T0LOCAL:C0GEN:{BASE + 12}.000100")
        reasons = {d.decision.agent: d.decision.reason for d in decided}
        assert reasons["lead"] == "conversation_partner"

    asyncio.run(scenario())
