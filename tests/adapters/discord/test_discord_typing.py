"""Inbound typing holds a buffered turn: real discord.py against a fake Discord, a real Host, and
each agent's turn assembler fed by the host's emissions, all on one virtual clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from builders import D_HUMAN, D_HUMAN2, D_W1, DISCORD_IDS, GUILD, discord_message, local_workspace
from fakes.discord import FakeDiscord

from adapters.discord.bots import start_connections
from adapters.discord.normalise import normalise
from c2a.host import Host
from c2a.records import record_of
from core.clock import VirtualClock, format_time
from core.emission import Emission
from core.sqlite_store import SQLiteStore
from harness_bridge.turns import Assembler, Turn
from harness_bridge.wire import METHOD_CANCELLED, METHOD_DELIVER, METHOD_TYPING

CHANNEL = "820000000000000001"
DM_CHANNEL = "830000000000000001"
TOKENS = {agent: f"{agent}-token-not-a-secret" for agent in DISCORD_IDS}
ENV = {
    "DISCORD_LEAD_TOKEN": TOKENS["lead"],
    "DISCORD_W1_TOKEN": TOKENS["worker-1"],
    "DISCORD_W2_TOKEN": TOKENS["worker-2"],
}
# The fake's own ids start at 2024-05-14T09:00Z; the host's clock starts a minute later, and the
# scripted messages and typing are stamped on that clock.
NOW = datetime(2024, 5, 14, 9, 1, tzinfo=UTC)
GUILD_TYPING, DM_TYPING = 1 << 11, 1 << 14


def at(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


class Composer:
    """A fake Discord, a host on an in-memory ledger, and one turn assembler per agent.

    The sink hands each agent's `chat/deliver`, `notifications/typing` and
    `notifications/cancelled` to that agent's assembler, as its harness would after the mailbox.
    """

    def __init__(self, fake: FakeDiscord) -> None:
        workspace = local_workspace()
        self.fake = fake
        self.clock = VirtualClock(NOW)
        self.store = SQLiteStore(":memory:")
        self.host = Host(workspace, self.store, self.clock, self.sink)
        self.assemblers = {agent: Assembler(self.clock) for agent in workspace.agent_ids}
        self.turns: list[tuple[str, Turn]] = []
        self.typing: list[tuple[str, dict[str, Any]]] = []
        self.arrivals: list[tuple[str | None, str | None, str]] = []  # event id, via, status
        self._changed = asyncio.Condition()

    async def sink(self, emissions: list[Emission]) -> None:
        for emission in map(record_of, emissions):
            if emission.kind != "rpc":
                continue  # reactions and other platform actions are the outbox's
            assembler = self.assemblers[emission.agent]
            method, params = emission.body.get("method"), emission.body.get("params", {})
            if method == METHOD_DELIVER:
                self.turns += [(emission.agent, t) for t in assembler.deliver(params)]
            elif method == METHOD_TYPING:
                self.typing.append((emission.agent, params))
                assembler.typing(params["conversation"], params["authorId"], params["until"])
            elif method == METHOD_CANCELLED:
                assembler.cancel(params["eventId"])

    async def receive(self, platform: str, payload: Mapping[str, Any], via: str | None) -> Any:
        event = normalise(payload)
        status = "failed"
        try:
            outcome = await self.host.receive(platform, payload, via)
            status = outcome.status if outcome is not None else "ignored"
            return outcome
        finally:
            async with self._changed:
                self.arrivals.append((event and event.event_id, via, status))
                self._changed.notify_all()

    async def arrived(self, event_id: str, count: int = 1) -> list[str]:
        """Wait until `count` connections handed the event to the host; returns the statuses."""

        def statuses() -> list[str]:
            return [status for eid, _, status in self.arrivals if eid == event_id]

        async with asyncio.timeout(5), self._changed:
            await self._changed.wait_for(lambda: len(statuses()) >= count)
        return statuses()

    def tick(self, to: datetime) -> list[tuple[str, Turn]]:
        """Move the clock to `to` and start every turn whose window closed; returns them."""
        self.clock.set(to)
        started = [(agent, t) for agent, a in self.assemblers.items() for t in a.due()]
        self.turns += started
        return started

    async def dm(self, bot_id: str, message_id: str, text: str, sent: datetime) -> str:
        """A person DMs one bot; returns the event id once the host has it."""
        frame = discord_message(
            message_id, text, channel=DM_CHANNEL, guild=None, timestamp=sent.isoformat()
        )
        await dispatch_to(self.fake, bot_id, "MESSAGE_CREATE", frame["d"])
        event_id = f"discord:{message_id}"
        await self.arrived(event_id)
        return event_id

    async def types(self, user_id: str, channel: str, started: datetime, bot_id: str | None) -> str:
        """A TYPING_START in Discord's shape: to one bot (a DM), or to every bot (`None`)."""
        stamp = int(started.timestamp())
        typing: dict[str, Any] = {"channel_id": channel, "user_id": user_id, "timestamp": stamp}
        event_id = f"discord:typing:{channel}:{user_id}@{stamp}"
        if bot_id is not None:  # a DM: no guild_id and no member, as Discord sends it
            await dispatch_to(self.fake, bot_id, "TYPING_START", typing)
            await self.arrived(event_id)
        else:
            member = self.fake.members[user_id]
            await self.fake.dispatch("TYPING_START", typing | {"guild_id": GUILD, "member": member})
            await self.arrived(event_id, count=len(DISCORD_IDS))
        return event_id


@asynccontextmanager
async def composing(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Composer]:
    async with FakeDiscord(guild_id=GUILD) as fake:
        fake.patch(monkeypatch)
        for number, (agent, user_id) in enumerate(DISCORD_IDS.items(), 1):
            fake.add_bot(TOKENS[agent], user_id, agent, f"91000000000000000{number}")
        fake.add_member(D_HUMAN, "ada.l")
        fake.add_member(D_HUMAN2, "grace.h")
        fake.add_channel(CHANNEL, "general")
        world = Composer(fake)
        await world.host.start()
        try:
            async with asyncio.timeout(5):
                started = await start_connections(
                    local_workspace(),
                    world.receive,
                    environ=ENV,
                    guild_ready_timeout=0.05,
                    clock=VirtualClock(),
                )
            try:
                yield world
            finally:
                for connection in started:
                    await connection.close()
        finally:
            await world.host.close()


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


def test_typing_in_a_dm_delays_the_buffered_turn_until_it_lapses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with composing(monkeypatch) as world:
            identifies = [f["d"]["intents"] for f in world.fake.gateway_received if f["op"] == 2]
            assert all(i & GUILD_TYPING and i & DM_TYPING for i in identifies)

            asked = await world.dm(D_W1, "1240000000000000101", "so about the deploy", at(0))
            assert world.assemblers["worker-1"].next_due() == at(3)  # the usual quiet window

            world.tick(at(2))
            typing_id = await world.types(D_HUMAN, DM_CHANNEL, at(2), bot_id=D_W1)

            assert await world.arrived(typing_id) == ["transient"]
            assert world.typing == [
                (
                    "worker-1",
                    {
                        "conversation": {"id": DM_CHANNEL, "kind": "dm"},
                        "authorId": D_HUMAN,
                        "until": format_time(at(12)),  # Discord's indicator lasts 10 s
                    },
                )
            ]
            assert [entry.id async for entry in world.store.ledger()] == [asked]
            assert world.tick(at(5)) == []  # past the 3 s window: still typing
            assert world.tick(at(11.999)) == []
            ((agent, turn),) = world.tick(at(12))
            assert (agent, turn.mode, turn.event_ids, turn.at) == (
                "worker-1",
                "buffered",
                [asked],
                at(12),
            )
            assert world.turns == [(agent, turn)]

    run(scenario())


def test_without_typing_the_dm_turn_starts_after_three_quiet_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with composing(monkeypatch) as world:
            asked = await world.dm(D_W1, "1240000000000000102", "so about the deploy", at(0))

            assert world.tick(at(2.999)) == []
            ((agent, turn),) = world.tick(at(3))
            assert (agent, turn.event_ids, turn.at) == ("worker-1", [asked], at(3))
            assert world.typing == []

    run(scenario())


def test_a_follow_up_typed_within_the_hold_joins_the_same_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with composing(monkeypatch) as world:
            first = await world.dm(D_W1, "1240000000000000103", "so about the deploy", at(0))
            world.tick(at(2))
            await world.types(D_HUMAN, DM_CHANNEL, at(2), bot_id=D_W1)
            assert world.tick(at(6)) == []
            second = await world.dm(D_W1, "1240000000000000104", "it failed twice", at(6))

            # The typing that led to the follow-up held the first fragment; both are one turn.
            ((agent, turn),) = world.tick(at(12))
            assert (agent, turn.event_ids) == ("worker-1", [first, second])

    run(scenario())


@pytest.mark.parametrize(
    ("typist", "starts"),
    [(D_HUMAN, at(12)), (D_HUMAN2, at(3))],
    ids=["the-asker-typing-holds-it", "someone-else-typing-does-not"],
)
def test_typing_in_a_channel_holds_only_the_typists_own_turn(
    monkeypatch: pytest.MonkeyPatch, typist: str, starts: datetime
) -> None:
    async def scenario() -> None:
        async with composing(monkeypatch) as world:
            # A fragment, not a complete question, so the compose window (3 s) applies.
            sent = await world.fake.user_says(CHANNEL, D_HUMAN, f"<@{D_W1}> so about staging")
            asked = f"discord:{sent['id']}"
            await world.arrived(asked, count=len(DISCORD_IDS))
            world.tick(at(2))
            await world.types(typist, CHANNEL, at(2), bot_id=None)

            # Every agent in the channel hears of it (once per bot's copy of the dispatch, as
            # typing is not ledgered; the copies are equal, so the assembler is unmoved by them).
            notes = {(agent, params["authorId"], params["until"]) for agent, params in world.typing}
            assert notes == {(agent, typist, format_time(at(12))) for agent in DISCORD_IDS}
            assert world.tick(starts - timedelta(milliseconds=1)) == []
            ((agent, turn),) = world.tick(starts)
            assert (agent, turn.event_ids, turn.at) == ("worker-1", [asked], starts)

    run(scenario())


async def dispatch_to(fake: FakeDiscord, bot_id: str, t: str, d: dict[str, Any]) -> None:
    """Send a dispatch to one bot's session only, as Discord sends a DM's events to the bot in it.

    `FakeDiscord.dispatch` gives a DM to every session with the DM intents, so this reaches into
    the fake's sessions (as `test_discord_live.dispatch_to` does).
    """
    session = next(s for s in fake._sessions.values() if s.bot.user["id"] == bot_id)
    await fake._send_dispatch(session, t, d)
