"""What is said while the host is down still reaches each agent once: real discord.py against
the fake Discord, a Host on a SQLite file that outlives each "process" (a Host and its three
bots' connections), restarted on the same ledger.

The kept gateway session is RESUMEd and Discord replays the gap; when Discord refuses the
session the gap is read from history, inside the manifest's window; beyond the window it is
logged as missed, not answered."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Coroutine, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import discord
import pytest
from builders import D_HUMAN, D_LEAD, DISCORD_IDS, GUILD, local_workspace
from fakes.discord import FakeDiscord

from adapters.discord.bots import start_connections
from adapters.discord.live import DiscordAgentConnection
from c2a.host import Host
from c2a.platforms import installed
from c2a.records import record_of
from core.clock import VirtualClock
from core.emission import Emission
from core.errors import ManifestError
from core.manifest import Workspace, parse_manifest
from core.sqlite_store import SQLiteStore
from core.store import StoredDelivery

CHANNEL = "820000000000000001"
TOKENS = {agent: f"{agent}-token-not-a-secret" for agent in DISCORD_IDS}
ENV = {
    "DISCORD_LEAD_TOKEN": TOKENS["lead"],
    "DISCORD_W1_TOKEN": TOKENS["worker-1"],
    "DISCORD_W2_TOKEN": TOKENS["worker-2"],
}
NOW = datetime(2024, 5, 14, 9, 1, tzinfo=UTC)  # the fake's clock starts at 09:00
CATCHUP_LOGGER = "adapters.discord.catchup"
IDENTIFY, RESUME = 2, 6


class Process:
    """One run of the host: a Host on the ledger file and every bot's connection."""

    def __init__(self, ledger: Path, workspace: Workspace, clock: VirtualClock) -> None:
        self.store = SQLiteStore(str(ledger))
        self.host = Host(workspace, self.store, clock, self.sink)
        self.workspace = workspace
        self.clock = clock
        self.delivered: list[tuple[str, str]] = []  # (agent, event id) of each chat/deliver
        self.connections: list[DiscordAgentConnection] = []
        self.hold: str | None = None  # text whose frames `receive` never finishes

    async def sink(self, emissions: list[Emission]) -> None:
        for e in map(record_of, emissions):
            if e.kind == "rpc" and e.body.get("method") == "chat/deliver":
                self.delivered.append((e.agent, e.body["params"]["eventId"]))

    async def receive(self, platform: str, payload: Mapping[str, Any], via: str | None) -> Any:
        if self.hold is not None and payload["d"].get("content") == self.hold:
            await asyncio.Event().wait()  # read from the socket, never committed
        return await self.host.receive(platform, payload, via)

    async def start(self) -> None:
        await self.host.start()
        async with asyncio.timeout(10):
            self.connections = await start_connections(
                self.workspace,
                self.receive,
                environ=ENV,
                guild_ready_timeout=0.05,
                store=self.store,
                clock=self.clock,
            )

    async def stop(self) -> None:
        for connection in self.connections:
            await connection.close()
        await self.host.close()


@asynccontextmanager
async def guild(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeDiscord]:
    # discord.py waits 5 s before any IDENTIFY but a process's first (Discord's IDENTIFY
    # rate limit); the fake has none, and the refused sessions here would each wait.
    monkeypatch.setattr(discord.Client, "before_identify_hook", _no_wait)
    async with FakeDiscord(guild_id=GUILD) as fake:
        fake.patch(monkeypatch)
        for number, (agent, user_id) in enumerate(DISCORD_IDS.items(), 1):
            fake.add_bot(TOKENS[agent], user_id, agent, f"91000000000000000{number}")
        fake.add_member(D_HUMAN, "ada.l")
        fake.add_channel(CHANNEL, "general")
        yield fake


async def _no_wait(self: discord.Client, shard_id: int | None, *, initial: bool = False) -> None:
    return None


def workspace(minutes: int = 30, messages: int = 300, **sharding: int) -> Workspace:
    catch_up = {"minutes": minutes, "messages": messages}
    return local_workspace(discord={"guild_id": GUILD, "catch_up": catch_up, **sharding})


async def until(predicate: Any, what: str) -> None:
    try:
        async with asyncio.timeout(10):
            while not predicate():
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


async def received_by_every_bot(process: Process, event_id: str) -> None:
    """Wait until every bot's connection has handed `event_id` to the host (its receipt is in
    the ledger). A connection hands its frames over in order, its catch-up first, so whatever
    it would have caught up is in the ledger by then."""
    try:
        async with asyncio.timeout(10):
            while await process.store.receipts(event_id) != sorted(DISCORD_IDS):
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for every bot to receive {event_id}") from None


def ops(fake: FakeDiscord) -> list[int]:
    return [f["op"] for f in fake.gateway_received if f["op"] in (IDENTIFY, RESUME)]


async def say(fake: FakeDiscord, *texts: str) -> list[str]:
    return [f"discord:{(await fake.user_says(CHANNEL, D_HUMAN, t))['id']}" for t in texts]


async def ledger_ids(ledger: Path) -> list[str]:
    store = SQLiteStore(str(ledger))
    await store.open()
    try:
        return [entry.id async for entry in store.ledger()]
    finally:
        await store.close()


async def deliveries(ledger: Path, event_id: str) -> list[StoredDelivery]:
    store = SQLiteStore(str(ledger))
    await store.open()
    try:
        return await store.deliveries(event_id)
    finally:
        await store.close()


def once_each(processes: list[Process], event_ids: list[str]) -> None:
    """Every event reached every agent's harness exactly once, across all runs."""
    delivered = [d for p in processes for d in p.delivered]
    for event_id in event_ids:
        agents = sorted(a for a, e in delivered if e == event_id)
        assert agents == sorted(DISCORD_IDS), (event_id, agents)


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


@pytest.mark.parametrize("shards", [0, 2], ids=["unsharded", "two-shards"])
def test_a_graceful_restart_resumes_and_the_gap_arrives_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shards: int
) -> None:
    ledger = tmp_path / "ledger.sqlite3"
    sharding = {"shard_count": shards} if shards else {}
    sessions = 3 * (shards or 1)

    async def scenario() -> None:
        async with guild(monkeypatch) as fake:
            first = Process(ledger, workspace(**sharding), VirtualClock(NOW))
            await first.start()
            [before] = await say(fake, "before the stop")
            await until(lambda: len(first.delivered) == 3, "the first message")
            await first.stop()
            assert len(fake._sessions) == sessions  # closed with 4000: all resumable

            gap = await say(fake, "while down", f"<@{D_LEAD}> are you there?")
            second = Process(ledger, workspace(**sharding), VirtualClock(NOW))
            await second.start()
            [after] = await say(fake, "after the restart")
            await until(lambda: len(second.delivered) == 9, "the gap and the next message")
            await second.stop()

            assert ops(fake) == [IDENTIFY] * sessions + [RESUME] * sessions
            assert await ledger_ids(ledger) == [before, *gap, after]
            once_each([first, second], [before, *gap, after])

    run(scenario())


def test_frames_read_but_not_committed_when_it_died_are_replayed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A frame stuck before its commit holds its session's mark back, though the frame behind
    it is committed meanwhile (frames are handed over several at once): the next start RESUMEs
    from before the stuck one, so it is replayed and taken, and the other is not taken twice."""
    ledger = tmp_path / "ledger.sqlite3"

    async def scenario() -> None:
        async with guild(monkeypatch) as fake:
            first = Process(ledger, workspace(), VirtualClock(NOW))
            await first.start()
            first.hold = "in memory only"
            for connection in first.connections:
                connection._drain_timeout = 0.05  # die without handing the queue over
            lost = await say(fake, "in memory only", "queued behind it")
            await until(lambda: len(first.delivered) == 3, "the frame behind the stuck one")
            await first.stop()
            assert {event_id for _, event_id in first.delivered} == {lost[1]}

            second = Process(ledger, workspace(), VirtualClock(NOW))
            await second.start()
            await until(lambda: len(second.delivered) == 3, "the replayed frames")
            await second.stop()

            assert ops(fake) == [IDENTIFY] * 3 + [RESUME] * 3
            assert await ledger_ids(ledger) == [lost[1], lost[0]]  # the stuck one came last
            once_each([first, second], lost)

    run(scenario())


def test_a_refused_session_is_caught_up_from_history_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    ledger = tmp_path / "ledger.sqlite3"

    async def scenario() -> None:
        async with guild(monkeypatch) as fake:
            first = Process(ledger, workspace(), VirtualClock(NOW))
            await first.start()
            [before] = await say(fake, "before the stop")
            await until(lambda: len(first.delivered) == 3, "the first message")
            await first.stop()

            gap = await say(fake, "while down", f"<@{D_LEAD}> are you there?")
            await fake.invalidate_sessions()
            second = Process(ledger, workspace(), VirtualClock(NOW + timedelta(minutes=2)))
            await second.start()
            [after] = await say(fake, "after the restart")
            await until(lambda: len(second.delivered) == 9, "the gap and the next message")
            await second.stop()

            # RESUME refused, then a fresh IDENTIFY per bot; the gap came from history.
            assert ops(fake) == [IDENTIFY] * 3 + [RESUME] * 3 + [IDENTIFY] * 3
            histories = [c for c in fake.calls if c.path == f"/channels/{CHANNEL}/messages"]
            assert len(histories) == 3
            assert await ledger_ids(ledger) == [before, *gap, after]
            once_each([first, second], [before, *gap, after])
            decisions = {d.decision.agent: d.decision for d in await deliveries(ledger, gap[1])}
            assert decisions["lead"].reason == "direct_mention"

    run(scenario())
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_gap_older_than_the_window_is_logged_as_missed_not_answered(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    ledger = tmp_path / "ledger.sqlite3"

    async def scenario() -> list[str]:
        async with guild(monkeypatch) as fake:
            first = Process(ledger, workspace(minutes=30), VirtualClock(NOW))
            await first.start()
            [before] = await say(fake, "before the stop")
            await until(lambda: len(first.delivered) == 3, "the first message")
            await first.stop()

            gap = await say(fake, "old news", f"<@{D_LEAD}> stale question")
            await fake.invalidate_sessions()
            fake._clock_ms += 2 * 3600 * 1000  # two hours pass, for Discord as for the host
            later = VirtualClock(NOW + timedelta(hours=2))
            second = Process(ledger, workspace(minutes=30), later)
            await second.start()
            [after] = await say(fake, "after the restart")
            await received_by_every_bot(second, after)
            await second.stop()

            assert await ledger_ids(ledger) == [before, after]
            return gap

    gap = asyncio.run(scenario())
    missed = [
        r.getMessage()
        for r in caplog.records
        if r.name == CATCHUP_LOGGER and r.levelno == logging.WARNING
    ]
    assert len(missed) == 3  # one line per bot for the one channel
    first_id, last_id = (g.removeprefix("discord:") for g in gap)
    for line in missed:
        assert f"channel {CHANNEL}: the messages from " in line
        assert f"(ids {first_id} to {last_id})" in line
        assert "beyond the catch-up window (30 minutes, 300 messages)" in line
        assert "stale question" not in line


# ---- the window in the manifest ----------------------------------------------------------------


def test_the_catch_up_window_defaults_to_30_minutes_and_300_messages() -> None:
    window = local_workspace().manifest.discord
    assert window is not None
    assert (window.catch_up.minutes, window.catch_up.messages) == (30, 300)


@pytest.mark.parametrize(
    ("catch_up", "problem"),
    [
        ({"minutes": -1}, "discord.catch_up.minutes: Input should be greater than or equal to 0"),
        ({"minutes": "30"}, "discord.catch_up.minutes: Input should be a valid integer"),
        ({"messages": True}, "discord.catch_up.messages: Input should be a valid integer"),
        ({"messages": 10_001}, "discord.catch_up.messages: Input should be less than or equal"),
        ({"hours": 1}, "discord.catch_up.hours: unknown key"),
    ],
)
def test_a_catch_up_window_that_cannot_work_is_refused(
    catch_up: dict[str, Any], problem: str
) -> None:
    manifest = {
        "version": 1,
        "workspace": "w",
        "discord": {"guild_id": GUILD, "catch_up": catch_up},
        "agents": {"lead": {}},
    }
    with pytest.raises(ManifestError) as raised:
        parse_manifest(manifest, "acme.yaml", platforms=installed())
    assert str(raised.value).startswith(f"acme.yaml: {problem}")
