"""A streamed reply on Discord end to end: the agent's port, the outbox and the real discord.py
sender against the fake Discord, fed a long answer on a virtual clock."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from builders import D_HUMAN, D_LEAD, local_workspace
from streamed_answer import Redraws, exact, stream
from test_discord_send import CHANNEL, MESSAGES, World, world

from adapters.discord import normalise
from adapters.discord.plugin import DRAFT_LIMIT
from core.clock import VirtualClock
from core.engine import Engine
from core.outbox import Outbox
from core.sqlite_store import SQLiteStore


def streamed(monkeypatch: pytest.MonkeyPatch, rate_limited: int) -> None:
    """Streams `answer()` as the lead answering a mention in #general, with the first
    `rate_limited` edits answered 429; checks what Discord holds at the end."""

    async def scenario() -> None:
        async with world(monkeypatch) as w:
            for _ in range(rate_limited):
                w.fake.fail_next("PATCH", f"{MESSAGES}/", retry_after=0.05)
            clock = VirtualClock(datetime(2024, 5, 14, 9, 1, tzinfo=UTC))
            store = SQLiteStore(":memory:")
            await store.open()
            engine = Engine(local_workspace(), store, clock)
            asked = await w.fake.user_says(CHANNEL, D_HUMAN, f"<@{D_LEAD}> the whole report")
            event = normalise({"op": 0, "s": 1, "t": "MESSAGE_CREATE", "d": w.fake.as_event(asked)})
            assert event is not None
            async with store.transaction():
                await engine.ingest(event, via="lead")
            outbox = Outbox(store, clock, {"discord": w.sender})
            edits = Redraws()
            seen = 0

            async def drain() -> None:
                nonlocal seen
                await outbox.drain()
                landed = [c for c in w.fake.calls if c.method == "PATCH" and c.status == 200]
                for call in landed[seen:]:
                    edits.at(call.path.rsplit("/", 1)[1], clock.now().timestamp())
                seen = len(landed)

            async with asyncio.timeout(120):
                reply = await stream(engine, event.event_id, clock, drain, limit=DRAFT_LIMIT)
            delivered(w, reply.keys, edits, rate_limited)
            await store.close()

    asyncio.run(scenario())


def delivered(w: World, keys: list[str], edits: Redraws, rate_limited: int) -> None:
    """The whole answer, exact, across the messages the reply posted once each, in the
    channel asked in, each within Discord's 2,000 characters; the first redrawn many times,
    each at most once a second; every 429 answered by a retry of the edit, never a post."""
    said = w.by(D_LEAD)
    texts = [str(m["content"]) for m in said]
    assert exact(texts)
    assert len(said) == len(keys) >= 6  # continued, each part posted once
    assert all(len(text) <= 2_000 for text in texts)
    assert {m["channel_id"] for m in said} == {CHANNEL}
    assert len(w.posts()) == len(said)
    assert len(edits.times[str(said[0]["id"])]) >= 5  # edited in place as it grew
    assert edits.paced()
    refused = [c for c in w.fake.calls if c.method == "PATCH" and c.status == 429]
    assert len(refused) == rate_limited
    # A message's finish asks for nothing its drafts did not: Discord shows it as they are shown.
    assert len({frozenset(c.json) for c in w.fake.calls if c.method == "PATCH"}) == 1


def test_a_long_streamed_reply_is_edited_in_place_at_most_once_a_second_then_continued(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    streamed(monkeypatch, rate_limited=0)


def test_edits_answered_429_post_nothing_twice_and_the_final_text_is_exact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    streamed(monkeypatch, rate_limited=3)
