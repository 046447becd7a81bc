"""Sharding: the manifest's keys, and real discord.py AutoShardedClients against a fake Discord.

`FakeDiscord` records IDENTIFY's `shard` but cannot serve a sharded client by itself: its READY
lacks the `shard` field that discord.py's AutoShardedClient reads (Discord echoes it), its
`GET /gateway/bot` always recommends one shard, and it sends every dispatch to every session.
`ShardedFakeDiscord` below adds those three, as Discord does them, without changing the fake.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Coroutine, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import discord
import discord.gateway
import discord.http
import pytest
from aiohttp import web
from builders import D_HUMAN, D_LEAD, DISCORD_IDS, GUILD, discord_message, local_workspace
from fakes.discord import MESSAGE_CONTENT, FakeDiscord

from adapters.discord.bots import start_connections
from adapters.discord.clients import ContentMode
from adapters.discord.live import NO_MESSAGE_CONTENT, DiscordAgentConnection
from adapters.discord.normalise import normalise
from adapters.discord.sharding import Sharding
from c2a.host import Host
from c2a.platforms import installed
from core.clock import VirtualClock
from core.emission import Emission
from core.errors import ManifestError
from core.manifest import Workspace, parse_manifest
from core.sqlite_store import SQLiteStore

CHANNEL = "820000000000000001"
DM_CHANNEL = "830000000000000001"
TOKENS = {agent: f"{agent}-token-not-a-secret" for agent in DISCORD_IDS}
ENV = {
    "DISCORD_LEAD_TOKEN": TOKENS["lead"],
    "DISCORD_W1_TOKEN": TOKENS["worker-1"],
    "DISCORD_W2_TOKEN": TOKENS["worker-2"],
}
NOW = datetime(2024, 5, 14, 9, 1, tzinfo=UTC)
LOGGER = "adapters.discord.live"
GUILD_SHARD_OF_2 = (int(GUILD) >> 22) % 2  # 1: the shard that carries GUILD when there are two


def manifest(**discord_keys: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "workspace": "w",
        "discord": {"guild_id": GUILD, **discord_keys},
        "agents": {"lead": {}},
    }


# ---- the manifest ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ({}, None),
        ({"shard_count": "auto"}, Sharding(None, None)),
        ({"shard_count": 2}, Sharding(2, None)),
        ({"shard_count": 4, "shard_ids": [0, 1]}, Sharding(4, (0, 1))),
    ],
    ids=["absent-plain-client", "auto", "fixed-count", "count-and-ids"],
)
def test_the_manifest_asks_for_sharding_with_shard_count(
    keys: dict[str, Any], expected: Sharding | None
) -> None:
    assert (
        Sharding.from_manifest(parse_manifest(manifest(**keys), platforms=installed()).discord)
        == expected
    )


def test_the_client_gets_the_count_and_ids_as_discord_py_takes_them() -> None:
    assert Sharding(4, (0, 1)).client_options() == {"shard_count": 4, "shard_ids": [0, 1]}
    assert Sharding().client_options() == {"shard_count": None, "shard_ids": None}
    assert Sharding(2, (1,)).receives_dms() is False
    assert Sharding(2).receives_dms() and Sharding(2, (0, 1)).receives_dms()


@pytest.mark.parametrize(
    ("keys", "problem"),
    [
        ({"shard_count": 0}, "discord.shard_count: must be a whole number of at least 1, or auto"),
        ({"shard_count": "2"}, "discord.shard_count: must be a whole number of at least 1"),
        ({"shard_count": True}, "discord.shard_count: must be a whole number of at least 1"),
        ({"shard_ids": [0]}, "discord: shard_ids needs shard_count set to a number"),
        ({"shard_count": "auto", "shard_ids": [0]}, "discord: shard_ids needs shard_count"),
        ({"shard_count": 2, "shard_ids": [1, 2]}, "discord: shard_ids [2] are not below"),
        ({"shard_count": 4, "shard_ids": [1, 1]}, "discord: shard_ids [1, 1] name a shard more"),
        ({"shard_count": 2, "shard_ids": []}, "discord.shard_ids: List should have at least 1"),
        ({"shard_count": 2, "shard_ids": [-1]}, "discord.shard_ids.0: Input should be greater"),
        ({"shard_count": 2, "shard_ids": ["1"]}, "discord.shard_ids.0: Input should be a valid"),
        (
            {"shard_count": 2, "shard_ids": [0]},
            "discord: shard_ids [0] leave out shard 1, which carries every event of guild "
            f"{GUILD} ((guild_id >> 22) % 2): add it",
        ),
    ],
)
def test_shard_keys_that_cannot_work_are_refused_with_the_reason(
    keys: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ManifestError) as raised:
        parse_manifest(manifest(**keys), "acme.yaml", platforms=installed())
    assert str(raised.value).startswith(f"acme.yaml: {problem}")


# ---- against the fake ------------------------------------------------------------------------


class ShardedFakeDiscord(FakeDiscord):
    """The fake, with the parts of sharding Discord does: READY echoes IDENTIFY's `shard`,
    `GET /gateway/bot` recommends `recommended` shards, and a dispatch goes only to the shard it
    belongs on: a guild's events to shard `(guild_id >> 22) % count`, everything else to 0."""

    def __init__(self, *, recommended: int = 1, **options: Any) -> None:
        super().__init__(**options)
        self.recommended = recommended
        self.shard_of: dict[str, tuple[int, int]] = {}  # session id -> (shard id, count)
        self._identifying: tuple[int, int] | None = None

    async def _identify(self, ws: web.WebSocketResponse, d: dict[str, Any]) -> Any:
        # The parent builds READY before its first await, so this is the IDENTIFY it answers.
        shard = d.get("shard")
        self._identifying = (shard[0], shard[1]) if shard else None
        return await super()._identify(ws, d)

    def _ready_payload(self, session: Any) -> dict[str, Any]:
        ready = super()._ready_payload(session)
        if self._identifying is None:
            return ready
        self.shard_of[session.id] = shard_id, count = self._identifying
        mine = [g for g in ready["guilds"] if _shard(g["id"], count) == shard_id]
        return ready | {"shard": [shard_id, count], "guilds": mine}

    async def _send_dispatch(self, session: Any, t: str, d: Any) -> None:
        shard = self.shard_of.get(session.id)
        if shard is not None and t not in ("READY", "RESUMED"):
            guild = d.get("id") if t == "GUILD_CREATE" else d.get("guild_id")
            if (_shard(guild, shard[1]) if guild else 0) != shard[0]:
                return
        await super()._send_dispatch(session, t, d)

    async def _get_gateway(self, req: Any) -> web.Response:
        answer = await super()._get_gateway(req)
        assert isinstance(answer.body, bytes)
        body = json.loads(answer.body) | {"shards": self.recommended}
        return web.Response(body=json.dumps(body).encode(), content_type="application/json")

    def session(self, bot_id: str, shard_id: int) -> Any:
        """One bot's session on one shard."""
        (found,) = [
            s
            for s in self._sessions.values()
            if s.bot.user["id"] == bot_id and self.shard_of.get(s.id, (0, 1))[0] == shard_id
        ]
        return found

    def dispatched(self, bot_id: str, shard_id: int) -> list[str]:
        """The names of the events one bot's shard was sent after connecting, in order."""
        sent = self.session(bot_id, shard_id).sent
        return [f["t"] for f in sent if f["t"] not in ("READY", "GUILD_CREATE")]

    async def dm(self, bot_id: str, message_id: str, text: str) -> None:
        """A person DMs a bot: Discord sends it on the bot's shard 0 alone."""
        frame = discord_message(message_id, text, channel=DM_CHANNEL, guild=None)
        await self._send_dispatch(self.session(bot_id, 0), "MESSAGE_CREATE", frame["d"])


def each(value: Any) -> dict[str, Any]:
    """The same value for every agent."""
    return dict.fromkeys(DISCORD_IDS, value)


def _shard(guild_id: str, count: int) -> int:
    return (int(guild_id) >> 22) % count


class Sharded:
    """A sharding fake Discord, a host on an in-memory ledger, and the three agents' connections."""

    def __init__(self, fake: ShardedFakeDiscord, workspace: Workspace) -> None:
        self.fake = fake
        self.store = SQLiteStore(":memory:")
        self.host = Host(workspace, self.store, VirtualClock(NOW), self.sink)
        self.connections: dict[str, DiscordAgentConnection] = {}
        self.arrivals: list[tuple[str | None, str | None, str]] = []  # event id, via, status
        self._changed = asyncio.Condition()

    async def sink(self, emissions: list[Emission]) -> None:
        pass  # what the host decided is read back from the ledger

    async def receive(self, platform: str, payload: Mapping[str, Any], via: str | None) -> Any:
        outcome = await self.host.receive(platform, payload, via)
        async with self._changed:
            event = normalise(payload)
            status = outcome.status if outcome is not None else "ignored"
            self.arrivals.append((event and event.event_id, via, status))
            self._changed.notify_all()
        return outcome

    async def arrived(self, event_id: str, copies: int) -> list[tuple[str | None, str]]:
        """Wait until `copies` of the event reached the host; returns (via, status) of each."""
        async with asyncio.timeout(5), self._changed:
            await self._changed.wait_for(lambda: len(self.copies(event_id)) >= copies)
        return self.copies(event_id)

    def copies(self, event_id: str) -> list[tuple[str | None, str]]:
        return [(via, status) for eid, via, status in self.arrivals if eid == event_id]

    async def decision(self, event_id: str, agent: str) -> tuple[str, str]:
        (found,) = [d for d in await self.store.deliveries(event_id) if d.decision.agent == agent]
        return found.decision.directedness.value, found.decision.reason

    def shards_identified(self, *, content: bool = True) -> dict[str, list[Any]]:
        """Each bot's IDENTIFY `shard` fields (None when absent), sorted, for one intent set."""
        by_token = {token: agent for agent, token in TOKENS.items()}
        found: dict[str, list[Any]] = {agent: [] for agent in DISCORD_IDS}
        for frame in self.fake.gateway_received:
            d = frame["d"]
            if frame["op"] == 2 and bool(d["intents"] & MESSAGE_CONTENT) is content:
                found[by_token[d["token"]]].append(d.get("shard"))
        return {agent: sorted(shards, key=str) for agent, shards in found.items()}


@asynccontextmanager
async def sharded(
    monkeypatch: pytest.MonkeyPatch,
    *,
    without: int = 0,
    recommended: int = 1,
    gateway_path: str = "/",
    **discord_keys: Any,
) -> AsyncIterator[Sharded]:
    """Three bots connected by `start_connections` under a manifest with these `discord` keys;
    `without` drops granted intents, `gateway_path` is the manifest's gateway on the fake."""
    # start_connections sets discord.py's process-wide endpoints: register them for restoring.
    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)
    gateway = discord.gateway.DiscordWebSocket
    monkeypatch.setattr(gateway, "DEFAULT_GATEWAY", gateway.DEFAULT_GATEWAY)
    # discord.py waits 5 s before each IDENTIFY after a client's first (Discord's limit); its
    # documented hook for that is all this replaces.
    monkeypatch.setattr(discord.Client, "before_identify_hook", _no_wait)
    async with ShardedFakeDiscord(guild_id=GUILD, recommended=recommended) as fake:
        for number, (agent, user_id) in enumerate(DISCORD_IDS.items(), 1):
            fake.add_bot(TOKENS[agent], user_id, agent, f"91000000000000000{number}")
        fake.add_member(D_HUMAN, "ada.l")
        fake.add_channel(CHANNEL, "general")
        fake.granted_intents &= ~without
        where = {"api_url": f"{fake.url}/api/v10", "gateway_url": fake.ws_url + gateway_path}
        workspace = local_workspace(discord={"guild_id": GUILD, **where, **discord_keys})
        world = Sharded(fake, workspace)
        await world.host.start()
        try:
            async with asyncio.timeout(5):
                started = await start_connections(
                    workspace,
                    world.receive,
                    environ=ENV,
                    guild_ready_timeout=0.05,
                    clock=VirtualClock(),
                )
            world.connections = {c.agent: c for c in started}
            try:
                yield world
            finally:
                for connection in started:
                    await connection.close()
        finally:
            await world.host.close()


async def _no_wait(client: discord.Client, shard_id: int | None, *, initial: bool = False) -> None:
    pass


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


def test_without_shard_count_each_bot_runs_a_plain_client(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with sharded(monkeypatch) as world:
            for connection in world.connections.values():
                assert isinstance(connection.client, discord.Client)
                assert not isinstance(connection.client, discord.AutoShardedClient)
                assert connection.sharding is None
            assert world.shards_identified() == each([None])

    run(scenario())


def test_a_fixed_shard_count_runs_every_shard_and_forwards_each_ones_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with sharded(monkeypatch, shard_count=2) as world:
            for connection in world.connections.values():
                client = connection.client
                assert isinstance(client, discord.AutoShardedClient)
                assert (client.shard_count, sorted(client.shards)) == (2, [0, 1])
            assert world.shards_identified() == each([[0, 2], [1, 2]])
            assert not [c for c in world.fake.calls if c.path.startswith("/gateway")]

            said = await world.fake.user_says(CHANNEL, D_HUMAN, f"<@{D_LEAD}> is the build green?")
            asked = f"discord:{said['id']}"
            copies = await world.arrived(asked, copies=len(DISCORD_IDS))
            await world.fake.dm(D_LEAD, "1240000000000000201", "a word?")
            dm_copies = await world.arrived("discord:1240000000000000201", copies=1)

            # The guild message came on the guild's shard, the DM on shard 0.
            assert world.fake.dispatched(D_LEAD, GUILD_SHARD_OF_2) == ["MESSAGE_CREATE"]
            assert world.fake.dispatched(D_LEAD, 1 - GUILD_SHARD_OF_2) == ["MESSAGE_CREATE"]
            assert sorted(status for _, status in copies) == ["new", "repeat", "repeat"]
            assert sorted(via or "" for via, _ in copies) == sorted(DISCORD_IDS)
            assert dm_copies == [("lead", "new")]
            assert await world.decision(asked, "lead") == ("to_me", "direct_mention")
            assert await world.decision("discord:1240000000000000201", "lead") == (
                "to_me",
                "direct_message",
            )

    run(scenario())


def test_shard_ids_run_only_those_shards(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with sharded(monkeypatch, shard_count=4, shard_ids=[0, 1]) as world:
            assert world.shards_identified() == each([[0, 4], [1, 4]])
            for connection in world.connections.values():
                assert connection.sharding == Sharding(4, (0, 1))
                assert isinstance(connection.client, discord.AutoShardedClient)
                assert sorted(connection.client.shards) == [0, 1]
            said = await world.fake.user_says(CHANNEL, D_HUMAN, "morning")
            await world.arrived(f"discord:{said['id']}", copies=len(DISCORD_IDS))

    run(scenario())


def test_an_automatic_count_asks_discord_and_dials_the_manifests_gateway(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        # GET /gateway/bot answers with the fake's root URL; the manifest's gateway is /resume,
        # which the fake serves too, so the path each shard dialled shows which URL it used.
        async with sharded(
            monkeypatch, shard_count="auto", recommended=2, gateway_path="/resume"
        ) as world:
            assert world.shards_identified() == each([[0, 2], [1, 2]])
            asked = [c.path for c in world.fake.calls if c.path.startswith("/gateway")]
            assert asked == ["/gateway/bot"] * len(DISCORD_IDS)
            dialled = {path.partition("?")[0] for path in world.fake.gateway_connections}
            assert dialled == {"/resume"}

            said = await world.fake.user_says(CHANNEL, D_HUMAN, f"<@{D_LEAD}> ping")
            await world.arrived(f"discord:{said['id']}", copies=len(DISCORD_IDS))

    run(scenario())


def test_without_message_content_a_sharded_bot_still_falls_back_to_mention_only(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)

    async def scenario() -> None:
        async with sharded(monkeypatch, without=MESSAGE_CONTENT, shard_count=2) as world:
            assert {c.mode for c in world.connections.values()} == {ContentMode.MENTION_ONLY}
            assert all(world.shards_identified(content=True).values())  # refused with 4014
            after = world.shards_identified(content=False)
            assert after == each([[0, 2], [1, 2]])

            said = await world.fake.user_says(CHANNEL, D_HUMAN, f"<@{D_LEAD}> is it green?")
            asked = f"discord:{said['id']}"
            await world.arrived(asked, copies=len(DISCORD_IDS))
            assert await world.decision(asked, "lead") == ("to_me", "direct_mention")

    run(scenario())
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert sorted(warnings) == sorted(NO_MESSAGE_CONTENT % agent for agent in DISCORD_IDS)


def test_shard_ids_without_shard_0_say_that_no_dms_arrive(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)

    async def scenario() -> None:
        async with sharded(monkeypatch, shard_count=2, shard_ids=[GUILD_SHARD_OF_2]) as world:
            expected = [[GUILD_SHARD_OF_2, 2]]
            assert world.shards_identified() == each(expected)
            said = await world.fake.user_says(CHANNEL, D_HUMAN, "morning")
            await world.arrived(f"discord:{said['id']}", copies=len(DISCORD_IDS))

    run(scenario())
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert sorted(warnings) == sorted(
        f"discord agent {agent}: shard_ids [{GUILD_SHARD_OF_2}] leave out shard 0, so no DMs "
        "reach this process"
        for agent in DISCORD_IDS
    )


def test_closing_while_shards_are_still_connecting_ends_promptly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """discord.py's own 5 s wait before the second shard's IDENTIFY is kept here, and closing
    in it must not leave discord.py retrying that shard for ever."""
    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)
    gateway = discord.gateway.DiscordWebSocket
    monkeypatch.setattr(gateway, "DEFAULT_GATEWAY", gateway.DEFAULT_GATEWAY)

    async def scenario() -> None:
        async with ShardedFakeDiscord(guild_id=GUILD) as fake:
            fake.patch(monkeypatch)
            fake.add_bot(TOKENS["lead"], D_LEAD, "lead", "910000000000000001")
            connection = DiscordAgentConnection(
                "lead",
                TOKENS["lead"],
                _never,
                sharding=Sharding(2),
                guild_ready_timeout=0.05,
                clock=VirtualClock(),
            )
            connection.start()
            async with asyncio.timeout(5):
                await fake.wait_ready(1)  # shard 0 is in; shard 1 waits to identify
            async with asyncio.timeout(2):
                await connection.close()
            assert connection.failure is None
            assert [f["d"].get("shard") for f in fake.gateway_received if f["op"] == 2] == [[0, 2]]

    run(scenario())


async def _never(platform: str, payload: Mapping[str, Any], via: str | None) -> None:
    raise AssertionError("nothing should be received")
