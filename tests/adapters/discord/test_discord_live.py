"""The live Discord receive path: real discord.py, three bots, a fake Discord, a real Host."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import discord
import discord.gateway
import discord.http
import pytest
from builders import (
    D_BACKEND_ROLE,
    D_HUMAN,
    D_HUMAN2,
    D_LEAD,
    D_LEAD_MANAGED_ROLE,
    D_W1,
    DISCORD_IDS,
    GUILD,
    discord_message,
    local_workspace,
)
from fakes.discord import MESSAGE_CONTENT, FakeDiscord

from adapters.discord.bots import start_connections
from adapters.discord.clients import RAW_ONLY, ContentMode, _unparsed, new_client, use_endpoints
from adapters.discord.frames import FORWARDED
from adapters.discord.live import NO_MESSAGE_CONTENT, DiscordAgentConnection
from adapters.discord.normalise import normalise
from adapters.discord.sharding import Sharding
from c2a.host import Host
from c2a.records import record_of
from core.clock import VirtualClock
from core.emission import Emission
from core.errors import ManifestError, StoreError
from core.manifest import Workspace
from core.sqlite_store import SQLiteStore

CHANNEL = "820000000000000001"
THREAD = "820000000000000077"
DM_CHANNEL = "830000000000000001"
TOKENS = {agent: f"{agent}-token-not-a-secret" for agent in DISCORD_IDS}
ENV = {
    "DISCORD_LEAD_TOKEN": TOKENS["lead"],
    "DISCORD_W1_TOKEN": TOKENS["worker-1"],
    "DISCORD_W2_TOKEN": TOKENS["worker-2"],
}
# The fake's ids and timestamps start at 2024-05-14T09:00Z; a host clock a minute later keeps
# every message inside its response deadline.
NOW = datetime(2024, 5, 14, 9, 1, tzinfo=UTC)
LOGGER = "adapters.discord.live"

Axes = tuple[str, str, str, str]


@dataclass(frozen=True, slots=True)
class Arrival:
    """One frame a connection handed to `receive`, and what the host made of it."""

    event_id: str | None
    via: str | None
    status: str
    content: str | None


class World:
    """A fake Discord, a host on an in-memory ledger, and the three agents' connections."""

    def __init__(self, fake: FakeDiscord, workspace: Workspace) -> None:
        self.fake = fake
        self.store = SQLiteStore(":memory:")
        self.host = Host(workspace, self.store, VirtualClock(NOW), self.sink)
        self.connections: dict[str, DiscordAgentConnection] = {}
        self.arrivals: list[Arrival] = []
        self.emissions: list[Emission] = []
        self.fail: Callable[[Mapping[str, Any], str | None], bool] = lambda payload, via: False
        # Times the ledger refuses the lead's copy of a message (by its text) before taking it.
        self.refusals: dict[str, int] = {}
        self._changed = asyncio.Condition()

    async def sink(self, emissions: list[Emission]) -> None:
        self.emissions.extend(emissions)

    async def receive(self, platform: str, payload: Mapping[str, Any], via: str | None) -> Any:
        event = normalise(payload)
        content = payload["d"].get("content")
        try:
            if self.fail(payload, via):
                raise RuntimeError("the ledger disk is full")
            if via == "lead" and self.refusals.get(content, 0):
                self.refusals[content] -= 1
                raise StoreError("could not commit to the ledger: deadlock detected")
            outcome = await self.host.receive(platform, payload, via)
        except (RuntimeError, StoreError) as exc:
            status = "failed" if isinstance(exc, RuntimeError) else "refused"
            self.arrivals.append(Arrival(event and event.event_id, via, status, content))
            raise
        finally:
            async with self._changed:
                self._changed.notify_all()
        status = outcome.status if outcome is not None else "ignored"
        self.arrivals.append(Arrival(event and event.event_id, via, status, content))
        return outcome

    async def until(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(5), self._changed:
            await self._changed.wait_for(predicate)

    def copies(self, event_id: str) -> list[Arrival]:
        return [a for a in self.arrivals if a.event_id == event_id]

    async def arrived(self, event_id: str, count: int = 3) -> list[Arrival]:
        """Wait until `count` connections handed the event over; returns those arrivals."""
        await self.until(lambda: len(self.copies(event_id)) >= count)
        return self.copies(event_id)

    async def says(self, author: str, content: str, channel: str = CHANNEL, **extra: Any) -> str:
        """A person posts; returns the event id once every bot's copy reached the host."""
        message = await self.fake.user_says(channel, author, content, **extra)
        event_id = f"discord:{message['id']}"
        await self.arrived(event_id)
        return event_id

    async def decisions(self, event_id: str) -> dict[str, Axes]:
        return {
            d.decision.agent: (
                d.decision.directedness.value,
                d.decision.policy.value,
                d.decision.mode.value,
                d.decision.reason,
            )
            for d in await self.store.deliveries(event_id)
        }

    async def ledger_ids(self) -> list[str]:
        return [entry.id async for entry in self.store.ledger()]

    def rpcs(self, method: str, event_id: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            (e.agent, e.body["params"])
            for e in map(record_of, self.emissions)
            if e.kind == "rpc"
            and e.body.get("method") == method
            and e.body["params"].get("eventId") == event_id
        ]

    def channel(self, agent: str) -> discord.TextChannel:
        client = self.connections[agent].client
        assert client is not None
        channel = client.get_channel(int(CHANNEL))
        assert isinstance(channel, discord.TextChannel)
        return channel


def _guild(fake: FakeDiscord) -> None:
    for number, (agent, user_id) in enumerate(DISCORD_IDS.items(), 1):
        fake.add_bot(TOKENS[agent], user_id, agent, f"91000000000000000{number}")
    fake.add_role(D_BACKEND_ROLE, "backend")
    fake.add_member(D_HUMAN, "ada.l")
    fake.add_member(D_HUMAN2, "grace.h")
    fake.add_channel(CHANNEL, "general")


@asynccontextmanager
async def live(
    monkeypatch: pytest.MonkeyPatch,
    *,
    workspace: Callable[[FakeDiscord], Workspace] | None = None,
    without: int = 0,
) -> AsyncIterator[World]:
    """Three bots connected through `start_connections`; `without` drops granted intents."""
    async with FakeDiscord(guild_id=GUILD) as fake:
        if workspace is None:
            fake.patch(monkeypatch)
        _guild(fake)
        fake.granted_intents &= ~without
        ws = workspace(fake) if workspace is not None else local_workspace()
        world = World(fake, ws)
        await world.host.start()
        try:
            async with asyncio.timeout(5):
                started = await start_connections(
                    ws, world.receive, environ=ENV, guild_ready_timeout=0.05, clock=VirtualClock()
                )
            world.connections = {c.agent: c for c in started}
            try:
                yield world
            finally:
                for connection in started:
                    await connection.close()
        finally:
            await world.host.close()


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


def test_a_dm_to_one_bot_reaches_only_that_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with live(monkeypatch) as world:
            frame = discord_message(
                "1240000000000000001",
                "can you look at the flaky test?",
                author=D_HUMAN,
                channel=DM_CHANNEL,
                guild=None,
                timestamp="2024-05-14T09:00:30+00:00",
            )
            await dispatch_to(world.fake, D_W1, "MESSAGE_CREATE", frame["d"])
            (arrival,) = await world.arrived("discord:1240000000000000001", count=1)

            assert arrival.via == "worker-1" and arrival.status == "new"
            assert await world.decisions("discord:1240000000000000001") == {
                "worker-1": ("to_me", "must_respond", "buffered", "direct_message")
            }

    run(scenario())


def test_a_direct_mention_is_to_me_for_that_agent_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with live(monkeypatch) as world:
            event_id = await world.says(D_HUMAN, f"<@{D_W1}> can you check the logs?")

            decisions = await world.decisions(event_id)
            assert decisions["worker-1"] == ("to_me", "must_respond", "buffered", "direct_mention")
            assert decisions["lead"][0] == decisions["worker-2"][0] == "to_other"

    run(scenario())


def test_a_bound_role_mention_goes_to_one_claimant(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with live(monkeypatch) as world:
            event_id = await world.says(D_HUMAN, f"<@&{D_BACKEND_ROLE}> who can look at this?")

            decisions = await world.decisions(event_id)
            workers = sorted(decisions[agent] for agent in ("worker-1", "worker-2"))
            assert workers == [
                ("to_my_role", "may_respond", "buffered", "role_mention"),
                ("to_my_role", "must_not_respond", "notify", "claimed_by_other"),
            ]
            assert decisions["lead"][0] == "to_other"

    run(scenario())


def test_a_mention_of_the_leads_managed_role_is_to_the_lead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with live(monkeypatch) as world:
            event_id = await world.says(D_HUMAN, f"<@&{D_LEAD_MANAGED_ROLE}> please review #42")

            decisions = await world.decisions(event_id)
            assert decisions["lead"] == ("to_me", "must_respond", "buffered", "direct_mention")
            assert decisions["worker-1"][0] == decisions["worker-2"][0] == "to_other"

    run(scenario())


def test_everyone_in_a_default_channel_is_ambient_for_all(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with live(monkeypatch) as world:
            event_id = await world.says(D_HUMAN, "@everyone the coffee machine is fixed")

            unaddressed = ("ambient", "must_not_respond", "tool_mailbox", "unaddressed")
            assert await world.decisions(event_id) == dict.fromkeys(DISCORD_IDS, unaddressed)

    run(scenario())


def test_everyone_where_the_channel_says_select_goes_to_one_responder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def selecting(fake: FakeDiscord) -> Workspace:
        fake.patch(monkeypatch)
        return local_workspace(channels={CHANNEL: {"broadcast": "select"}})

    async def scenario() -> None:
        async with live(monkeypatch, workspace=selecting) as world:
            event_id = await world.says(D_HUMAN, "@everyone who can restart the build?")

            decisions = await world.decisions(event_id)
            chosen = [a for a, d in decisions.items() if d[2] == "buffered"]
            assert len(chosen) == 1
            assert all(
                d[:2] == ("to_my_role", "must_not_respond")
                for a, d in decisions.items()
                if a not in chosen
            )

    run(scenario())


def test_a_reply_to_the_bot_with_the_ping_off_is_to_me(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with live(monkeypatch) as world:
            posted = await world.channel("lead").send("the deploy is done")
            await world.arrived(f"discord:{posted.id}")

            reply = await world.fake.user_says(
                CHANNEL,
                D_HUMAN,
                "why did it take so long?",
                message_reference={"message_id": str(posted.id)},
            )
            event_id = f"discord:{reply['id']}"
            await world.arrived(event_id)

            assert reply["mentions"] == []  # the reply ping is off
            decisions = await world.decisions(event_id)
            assert decisions["lead"] == ("to_me", "must_respond", "buffered", "reply_to_me")
            assert decisions["worker-1"][0] == decisions["worker-2"][0] == "to_other"

    run(scenario())


def test_a_message_in_a_thread_the_bot_started_is_to_its_role(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with live(monkeypatch) as world:
            await world.fake.dispatch("THREAD_CREATE", thread(owner=D_LEAD))
            await world.arrived(f"discord:thread:{THREAD}")
            world.fake.add_channel(THREAD, "deploy-42")  # so its messages carry the guild

            event_id = await world.says(D_HUMAN, "is staging green now?", channel=THREAD)

            decisions = await world.decisions(event_id)
            assert decisions["lead"] == (
                "to_my_role",
                "may_respond",
                "notify",
                "thread_participant",
            )

    run(scenario())


def test_raw_edit_and_delete_of_an_uncached_message_reach_the_ledger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with live(monkeypatch) as world:
            sent = await world.fake.user_says(CHANNEL, D_HUMAN, f"<@{D_LEAD}> deploy to staging")
            original = f"discord:{sent['id']}"
            await world.arrived(original)
            for connection in world.connections.values():
                assert connection.client is not None and not connection.client.cached_messages

            edited_at = "2024-05-14T09:00:40.000000+00:00"
            edit = {"content": f"<@{D_LEAD}> deploy to prod", "edited_timestamp": edited_at}
            await world.fake.dispatch("MESSAGE_UPDATE", world.fake.as_event(sent) | edit)
            edit_id = f"{original}~{edited_at}"
            await world.arrived(edit_id)
            deleted = {"id": sent["id"], "channel_id": CHANNEL, "guild_id": GUILD}
            await world.fake.dispatch("MESSAGE_DELETE", deleted)
            await world.arrived(f"{original}~deleted")

            assert await world.ledger_ids() == [original, edit_id, f"{original}~deleted"]
            assert ("lead", {"eventId": original, "reason": "superseded"}) in world.rpcs(
                "notifications/cancelled", original
            )
            (lead_edit,) = [p for a, p in world.rpcs("chat/deliver", edit_id) if a == "lead"]
            assert lead_edit["supersedes"] == original
            assert ("lead", {"eventId": edit_id, "reason": "deleted"}) in world.rpcs(
                "notifications/cancelled", edit_id
            )
            texts = {entry.id: entry.data.get("text") async for entry in world.store.ledger()}
            assert texts[original] == texts[edit_id] == ""  # tombstones keep no text

    run(scenario())


def test_a_reaction_on_the_agents_message_is_a_signal_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with live(monkeypatch) as world:
            posted = await world.channel("lead").send("shall I roll back?")
            await world.arrived(f"discord:{posted.id}")

            reaction = {
                "user_id": D_HUMAN,
                "channel_id": CHANNEL,
                "message_id": str(posted.id),
                "guild_id": GUILD,
                "emoji": {"id": None, "name": "👍"},
                "message_author_id": D_LEAD,
                "member": world.fake.members[D_HUMAN],
                "burst": False,
                "type": 0,
            }
            await world.fake.dispatch("MESSAGE_REACTION_ADD", reaction)
            event_id = f"discord:{posted.id}+{D_HUMAN}:👍"
            await world.arrived(event_id)

            decisions = await world.decisions(event_id)
            assert decisions["lead"] == ("to_me", "may_respond", "notify", "signal_agree")

    run(scenario())


def test_a_guild_message_seen_by_three_bots_is_one_ledger_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with live(monkeypatch) as world:
            event_id = await world.says(D_HUMAN, "morning all")

            copies = world.copies(event_id)
            assert sorted(a.via or "" for a in copies) == sorted(DISCORD_IDS)
            assert sorted(a.status for a in copies) == ["new", "repeat", "repeat"]
            assert await world.ledger_ids() == [event_id]
            assert sorted(await world.store.receipts(event_id)) == sorted(DISCORD_IDS)
            delivered = [agent for agent, _ in world.rpcs("chat/deliver", event_id)]
            assert sorted(delivered) == sorted(DISCORD_IDS)  # one delivery per agent

    run(scenario())


def test_a_reconnect_and_resume_lose_nothing_and_repeat_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with live(monkeypatch) as world:
            lead = world.connections["lead"].client
            assert lead is not None and lead.ws is not None
            rewind_to = lead.ws.sequence
            before = await world.says(D_HUMAN, "before the reconnect")
            # The lead's RESUME asks from before that message, so the gateway replays it.
            lead.ws.sequence = rewind_to

            clients = [c.client for c in world.connections.values() if c.client is not None]
            gone = [asyncio.ensure_future(c.wait_for("disconnect")) for c in clients]
            resumed = [asyncio.ensure_future(c.wait_for("resumed")) for c in clients]
            reconnecting = asyncio.create_task(world.fake.request_reconnect())
            async with asyncio.timeout(5):
                await asyncio.gather(*gone)
                during = await world.fake.user_says(CHANNEL, D_HUMAN, "while reconnecting")
                await reconnecting
                await asyncio.gather(*resumed)
            during_id = f"discord:{during['id']}"
            await world.arrived(during_id)
            after = await world.says(D_HUMAN, "after the reconnect")

            ops = [frame["op"] for frame in world.fake.gateway_received if frame["op"] in (2, 6)]
            assert sorted(ops) == [2, 2, 2, 6, 6, 6]  # three IDENTIFYs, then three RESUMEs
            lead_copies = [a.status for a in world.copies(before) if a.via == "lead"]
            assert lead_copies in (["new", "repeat"], ["repeat", "repeat"])
            assert len(world.copies(before)) == 4  # the replayed copy did reach the host
            assert await world.ledger_ids() == [before, during_id, after]
            for event_id in (before, during_id, after):
                assert sorted(await world.store.receipts(event_id)) == sorted(DISCORD_IDS)
                delivered = [agent for agent, _ in world.rpcs("chat/deliver", event_id)]
                assert sorted(delivered) == sorted(DISCORD_IDS)

    run(scenario())


def test_without_message_content_one_line_explains_and_mentions_arrive(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)

    async def scenario() -> None:
        async with live(monkeypatch, without=MESSAGE_CONTENT) as world:
            assert {c.mode for c in world.connections.values()} == {ContentMode.MENTION_ONLY}
            identifies = [f["d"]["intents"] for f in world.fake.gateway_received if f["op"] == 2]
            assert [bool(i & MESSAGE_CONTENT) for i in identifies] == [True] * 3 + [False] * 3

            asked = await world.says(D_HUMAN, f"<@{D_LEAD}> is the build green?")
            chat = await world.says(D_HUMAN, "lunch anyone?")

            lead_copy = next(a for a in world.copies(asked) if a.via == "lead")
            assert lead_copy.content == f"<@{D_LEAD}> is the build green?"
            decisions = await world.decisions(asked)
            assert decisions["lead"] == ("to_me", "must_respond", "buffered", "direct_mention")
            assert {a.content for a in world.copies(chat)} == {""}

    run(scenario())
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert sorted(r.getMessage() for r in warnings) == sorted(
        NO_MESSAGE_CONTENT % agent for agent in DISCORD_IDS
    )
    assert all("\n" not in r.getMessage() for r in warnings)


def test_a_failing_receive_is_logged_and_the_connection_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger=LOGGER)

    async def scenario() -> None:
        async with live(monkeypatch) as world:
            world.fail = lambda payload, via: via == "lead" and payload["d"]["content"] == "one"
            first = await world.says(D_HUMAN, "one")
            second = await world.says(D_HUMAN, "two")

            assert [a.status for a in world.copies(first) if a.via == "lead"] == ["failed"]
            assert [a.status for a in world.copies(second) if a.via == "lead"] != ["failed"]
            assert sorted(await world.store.receipts(second)) == sorted(DISCORD_IDS)

    run(scenario())
    (line,) = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert line.startswith("discord agent lead: MESSAGE_CREATE (seq ")
    assert line.endswith("was not received: RuntimeError: the ledger disk is full")


def test_a_dispatch_the_ledger_refuses_is_handed_over_again_until_it_is_taken(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Discord sends a dispatch once: one a commit refused (a deadlock, the server out of
    reach) is not dropped but tried again, and the lead decides it as if nothing happened."""
    caplog.set_level(logging.WARNING, logger=LOGGER)

    seen: dict[str, Any] = {}

    async def scenario() -> None:
        async with live(monkeypatch) as world:
            text = f"<@{D_LEAD}> one"
            world.refusals[text] = 2
            message = await world.fake.user_says(CHANNEL, D_HUMAN, text)
            event_id = f"discord:{message['id']}"
            await world.until(lambda: len(world.copies(event_id)) == 5)
            seen["statuses"] = [a.status for a in world.copies(event_id) if a.via == "lead"]
            seen["decision"] = (await world.decisions(event_id))["lead"]

    run(scenario())
    statuses, decision = seen["statuses"], seen["decision"]
    assert statuses[:2] == ["refused", "refused"] and statuses[2] in ("new", "repeat")
    assert decision == ("to_me", "must_respond", "buffered", "direct_mention")
    (line,) = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert line.startswith("discord agent lead: MESSAGE_CREATE (seq ")
    assert line.endswith(
        "could not be stored yet, trying again: could not commit to the ledger: deadlock detected"
    )


def test_only_handled_dispatches_of_this_guild_are_forwarded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with live(monkeypatch) as world:
            elsewhere = discord_message("1240000000000000009", "hi", guild="800000000000000999")
            await world.fake.dispatch("MESSAGE_CREATE", elsewhere["d"])
            await world.fake.dispatch("CHANNEL_PINS_UPDATE", {"channel_id": CHANNEL})
            typing = {"channel_id": CHANNEL, "guild_id": GUILD, "user_id": D_HUMAN}
            await world.fake.dispatch("TYPING_START", typing | {"timestamp": 1715677230})
            last = await world.says(D_HUMAN, "the last one")

            # Each connection hands frames over in order, so all earlier ones are in by now.
            assert {a.event_id for a in world.arrivals} == {
                f"discord:typing:{CHANNEL}:{D_HUMAN}@1715677230",
                last,
            }
            typing_statuses = {a.status for a in world.arrivals if a.event_id != last}
            assert typing_statuses == {"transient"}

    run(scenario())


def test_endpoints_and_tokens_come_from_the_manifest_and_environment(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # use_endpoints sets process-wide class attributes: register them so the test restores them.
    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)
    gateway = discord.gateway.DiscordWebSocket
    monkeypatch.setattr(gateway, "DEFAULT_GATEWAY", gateway.DEFAULT_GATEWAY)
    caplog.set_level(logging.DEBUG)

    def workspace(fake: FakeDiscord) -> Workspace:
        endpoints = {"api_url": f"{fake.url}/api/v10/", "gateway_url": f"{fake.ws_url}/"}
        return local_workspace(discord={"guild_id": GUILD, **endpoints})

    async def scenario() -> None:
        async with live(monkeypatch, workspace=workspace) as world:
            assert (discord.http.Route.BASE, str(gateway.DEFAULT_GATEWAY)) == (
                f"{world.fake.url}/api/v10",
                f"{world.fake.ws_url}/",
            )
            event_id = await world.says(D_HUMAN2, f"<@{D_LEAD}> ping")
            assert (await world.decisions(event_id))["lead"][0] == "to_me"
            assert {c.path for c in world.fake.calls} == {"/users/@me", "/oauth2/applications/@me"}

    run(scenario())
    assert caplog.records  # discord.py logged at DEBUG, and no line holds a token
    assert not [r for r in caplog.records if any(t in r.getMessage() for t in TOKENS.values())]


def test_a_rejected_token_fails_the_start_and_closes_the_other_bots(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger=LOGGER)
    wrong = "revoked-token-not-a-secret"

    async def scenario() -> None:
        async with FakeDiscord(guild_id=GUILD) as fake:
            fake.patch(monkeypatch)
            _guild(fake)
            environ = ENV | {"DISCORD_W2_TOKEN": wrong}
            with pytest.raises(ConnectionError, match="worker-2") as raised:
                async with asyncio.timeout(5):
                    await start_connections(
                        local_workspace(),
                        _never,
                        environ=environ,
                        guild_ready_timeout=0.05,
                        clock=VirtualClock(),
                    )
            assert isinstance(raised.value.__cause__, discord.LoginFailure)

    run(scenario())
    (line,) = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert line.startswith("discord agent worker-2: connection ended: LoginFailure: ")
    assert wrong not in caplog.text


def test_unset_token_variables_are_named_before_anything_connects() -> None:
    async def scenario() -> None:
        with pytest.raises(ManifestError) as raised:
            await start_connections(
                local_workspace(),
                _never,
                environ={"DISCORD_LEAD_TOKEN": TOKENS["lead"]},
                clock=VirtualClock(),
            )
        assert str(raised.value) == (
            "Discord tokens not set in the environment: "
            "DISCORD_W1_TOKEN (agent worker-1), DISCORD_W2_TOKEN (agent worker-2)"
        )
        assert TOKENS["lead"] not in str(raised.value)

    run(scenario())


def test_endpoints_of_the_wrong_scheme_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)
    with pytest.raises(ManifestError, match=r"discord\.api_url must be an http"):
        use_endpoints(api_url="ws://127.0.0.1:1/api/v10")
    with pytest.raises(ManifestError, match=r"discord\.gateway_url must be a ws"):
        use_endpoints(gateway_url="https://gateway.discord.gg/")


async def _never(platform: str, payload: Mapping[str, Any], via: str | None) -> None:
    raise AssertionError("nothing should be received")


def thread(owner: str) -> dict[str, Any]:
    """A THREAD_CREATE for a public thread under CHANNEL, in Discord's shape."""
    return {
        "id": THREAD,
        "type": 11,
        "guild_id": GUILD,
        "parent_id": CHANNEL,
        "owner_id": owner,
        "name": "deploy-42",
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "message_count": 0,
        "member_count": 1,
        "total_message_sent": 0,
        "flags": 0,
        "newly_created": True,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": "2024-05-14T09:00:20.000000+00:00",
            "locked": False,
            "create_timestamp": "2024-05-14T09:00:20.000000+00:00",
        },
    }


async def dispatch_to(fake: FakeDiscord, bot_id: str, t: str, d: dict[str, Any]) -> None:
    """Send a dispatch to one bot's session only, as Discord sends a DM to the bot in it.

    `FakeDiscord.dispatch` gives a DM to every session with the DM intents, so this reaches
    into the fake's sessions.
    """
    session = next(s for s in fake._sessions.values() if s.bot.user["id"] == bot_id)
    await fake._send_dispatch(session, t, d)


@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "sharded"])
def test_discordpy_parses_no_dispatch_the_connection_reads_raw(sharded: bool) -> None:
    """The message dispatches are read from the raw frame alone; discord.py still parses what
    the bots use (guilds, channels, threads, interactions) and reads every frame's sequence."""

    async def scenario() -> None:
        sharding = Sharding(count=2, ids=(0, 1)) if sharded else None
        client = new_client(cast(Any, object()), ContentMode.FULL, 0.05, sharding)
        parsers = client._connection.parsers
        assert RAW_ONLY <= FORWARDED
        assert {name for name, parse in parsers.items() if parse is _unparsed} == RAW_ONLY
        for kept in ("GUILD_CREATE", "CHANNEL_CREATE", "THREAD_CREATE", "INTERACTION_CREATE"):
            assert parsers[kept] is not _unparsed  # never started: nothing to close

    run(scenario())
