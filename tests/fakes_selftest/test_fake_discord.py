"""The fake Discord drives real discord.py: login, gateway events, REST recording, 429, RESUME,
INVALID_SESSION and history."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

with warnings.catch_warnings():
    # discord.py imports audioop, deprecated since Python 3.11; filterwarnings=error makes it fatal.
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord
    from fakes.discord import MESSAGE_CONTENT, FakeDiscord

TOKEN = "fake-bot-token"
BOT_ID = "800000000000000390"
APP_ID = "800000000000000901"
ADA_ID = "800000000000000301"
CHANNEL_ID = "800000000000000101"


def _intents(*, message_content: bool = True) -> discord.Intents:
    return discord.Intents(
        guilds=True,
        guild_messages=True,
        dm_messages=True,
        reactions=True,
        message_content=message_content,
    )


class Recorder(discord.Client):
    """A discord.Client that queues the events these tests wait for."""

    def __init__(self, intents: discord.Intents) -> None:
        # on_ready fires guild_ready_timeout after the last GUILD_CREATE (2 s by default).
        super().__init__(intents=intents, guild_ready_timeout=0.05)
        self.ready = asyncio.Event()
        self.events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    async def on_ready(self) -> None:
        self.ready.set()

    async def on_message(self, message: discord.Message) -> None:
        self.events.put_nowait(("message", message))

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        self.events.put_nowait(("raw_message_edit", payload))

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        self.events.put_nowait(("raw_message_delete", payload))

    async def on_resumed(self) -> None:
        self.events.put_nowait(("resumed", None))

    async def next(self, name: str) -> Any:
        """The next queued event called `name`, skipping others (the bot's own echoes)."""
        async with asyncio.timeout(5):
            while True:
                event, value = await self.events.get()
                if event == name:
                    return value


def _world(fake: FakeDiscord) -> None:
    fake.add_bot(TOKEN, BOT_ID, "c2a-bot", APP_ID)
    fake.add_member(ADA_ID, "ada.l")
    fake.add_channel(CHANNEL_ID, "general")


@asynccontextmanager
async def running(
    monkeypatch: pytest.MonkeyPatch, intents: discord.Intents | None = None
) -> AsyncIterator[tuple[FakeDiscord, Recorder]]:
    async with FakeDiscord() as fake:
        fake.patch(monkeypatch)
        _world(fake)
        client = Recorder(intents or _intents())
        task = asyncio.create_task(client.start(TOKEN))
        try:
            ready = asyncio.create_task(client.ready.wait())
            done, _ = await asyncio.wait([ready, task], timeout=5, return_when="FIRST_COMPLETED")
            ready.cancel()
            if task in done:
                task.result()  # raises why login or the gateway failed
            assert ready in done, "no on_ready within 5 s"
            yield fake, client
        finally:
            await client.close()
            await task


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


def test_client_logs_in_and_gets_on_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(monkeypatch) as (fake, client):
            await fake.wait_ready()
            assert client.user is not None and str(client.user.id) == BOT_ID
            assert client.application_id == int(APP_ID)
            guild = client.get_guild(int(fake.guild_id))
            assert guild is not None and guild.get_channel(int(CHANNEL_ID)) is not None
            me = guild.get_member(int(BOT_ID))
            assert me is not None
            bot_role = me.roles[-1]
            assert bot_role.managed and bot_role.tags is not None
            assert bot_role.tags.bot_id == int(BOT_ID)
            identify = next(f for f in fake.gateway_received if f["op"] == 2)
            assert identify["d"]["intents"] == _intents().value
            assert [c.path for c in fake.calls] == ["/users/@me", "/oauth2/applications/@me"]

    run(scenario())


def test_dispatched_message_events_reach_the_handlers(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(monkeypatch) as (fake, client):
            sent = await fake.user_says(CHANNEL_ID, ADA_ID, f"hi <@{BOT_ID}>")
            message = await client.next("message")
            assert message.content == f"hi <@{BOT_ID}>"
            assert message.author.id == int(ADA_ID) and isinstance(message.author, discord.Member)
            assert client.user in message.mentions

            edited_at = "2024-05-14T09:05:00.000000+00:00"
            edited = fake.as_event(sent) | {"content": "hi again", "edited_timestamp": edited_at}
            await fake.dispatch("MESSAGE_UPDATE", edited)
            edit = await client.next("raw_message_edit")
            assert edit.message_id == int(sent["id"]) and edit.data["content"] == "hi again"

            deleted = {"id": sent["id"], "channel_id": CHANNEL_ID, "guild_id": fake.guild_id}
            await fake.dispatch("MESSAGE_DELETE", deleted)
            delete = await client.next("raw_message_delete")
            assert delete.message_id == int(sent["id"]) and delete.channel_id == int(CHANNEL_ID)

    run(scenario())


def test_channel_send_is_recorded_with_its_body(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(monkeypatch) as (fake, client):
            channel = client.get_channel(int(CHANNEL_ID))
            assert isinstance(channel, discord.TextChannel)
            none = discord.AllowedMentions.none()
            reply = await channel.send("on it", allowed_mentions=none)

            post = fake.calls[-1]
            assert (post.method, post.path, post.status) == (
                "POST",
                f"/channels/{CHANNEL_ID}/messages",
                200,
            )
            assert post.json["content"] == "on it"
            assert post.json["allowed_mentions"] == {"parse": []}
            assert post.headers["Authorization"] == f"Bot {TOKEN}"
            assert reply.id == int(next(iter(fake.messages)))
            assert reply.author.id == int(BOT_ID)

    run(scenario())


def test_a_429_with_via_is_retried_and_one_message_is_created(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with running(monkeypatch) as (fake, client):
            fake.fail_next("POST", f"/channels/{CHANNEL_ID}/messages", 429, retry_after=0.05)
            channel = client.get_channel(int(CHANNEL_ID))
            assert isinstance(channel, discord.TextChannel)
            await channel.send("after the limit")

            posts = [c for c in fake.calls if c.method == "POST"]
            assert [c.status for c in posts] == [429, 200]
            assert posts[0].json == posts[1].json  # same nonce: a retry, not a second message
            assert [m["content"] for m in fake.messages.values()] == ["after the limit"]

    run(scenario())


def test_a_429_without_via_is_a_cloudflare_ban(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(monkeypatch) as (fake, client):
            fake.fail_next("POST", "/channels/", 429, via=False)
            channel = client.get_channel(int(CHANNEL_ID))
            assert isinstance(channel, discord.TextChannel)
            with pytest.raises(discord.HTTPException) as raised:
                await channel.send("banned")
            assert raised.value.status == 429 and fake.messages == {}

    run(scenario())


def test_reconnect_resumes_and_later_dispatches_arrive(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(monkeypatch) as (fake, client):
            await fake.user_says(CHANNEL_ID, ADA_ID, "before")
            assert (await client.next("message")).content == "before"
            await fake.request_reconnect()
            assert await client.next("resumed") is None
            await fake.user_says(CHANNEL_ID, ADA_ID, "still there?")
            assert (await client.next("message")).content == "still there?"  # "before" not replayed

            ops = [f["op"] for f in fake.gateway_received if f["op"] != 1]
            assert ops == [2, 6]
            resume = next(f["d"] for f in fake.gateway_received if f["op"] == 6)
            assert resume["session_id"] == "fake-session-1" and resume["seq"] == 3
            assert fake.gateway_connections[1].startswith("/resume?")

    run(scenario())


def test_an_ungranted_privileged_intent_closes_with_4014(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with FakeDiscord() as fake:
            fake.patch(monkeypatch)
            _world(fake)
            fake.granted_intents &= ~MESSAGE_CONTENT
            client = Recorder(_intents())
            async with client:
                with pytest.raises(discord.PrivilegedIntentsRequired):
                    async with asyncio.timeout(5):
                        await client.start(TOKEN)

    run(scenario())


def test_without_message_content_guild_text_arrives_blank(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(monkeypatch, _intents(message_content=False)) as (fake, client):
            await fake.user_says(CHANNEL_ID, ADA_ID, "secret plans")
            assert (await client.next("message")).content == ""
            await fake.user_says(CHANNEL_ID, ADA_ID, f"<@{BOT_ID}> secret plans")
            assert (await client.next("message")).content == f"<@{BOT_ID}> secret plans"

    run(scenario())


def test_edit_react_typing_history_and_dm_are_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with running(monkeypatch) as (fake, client):
            channel = client.get_channel(int(CHANNEL_ID))
            assert isinstance(channel, discord.TextChannel)
            question = await fake.user_says(CHANNEL_ID, ADA_ID, "status?")
            asked = await channel.fetch_message(int(question["id"]))
            await asked.add_reaction("👀")
            await channel.typing()
            reply = await asked.reply("green", mention_author=False)
            await reply.edit(content="all green")
            history = [m.content async for m in channel.history(limit=10)]
            assert client.user is not None
            await asked.remove_reaction("👀", client.user)
            await reply.delete()
            dm = await (await client.fetch_user(int(ADA_ID))).create_dm()
            await dm.send("psst")

            assert history == ["all green", "status?"]
            assert reply.reference is not None and reply.reference.message_id == asked.id
            assert [(c.method, c.path.replace(CHANNEL_ID, "C")) for c in fake.calls[2:9]] == [
                ("GET", f"/channels/C/messages/{question['id']}"),
                ("PUT", f"/channels/C/messages/{question['id']}/reactions/👀/@me"),
                ("POST", "/channels/C/typing"),
                ("POST", "/channels/C/messages"),
                ("PATCH", f"/channels/C/messages/{reply.id}"),
                ("GET", "/channels/C/messages"),
                ("DELETE", f"/channels/C/messages/{question['id']}/reactions/👀/@me"),
            ]
            assert fake.calls[-2].json == {"recipient_id": int(ADA_ID)}  # discord.py sends an int
            assert fake.calls[-1].path == f"/channels/{dm.id}/messages"

    run(scenario())


async def _next_dispatch(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    """The next frame that is not a heartbeat ACK or HELLO."""
    async with asyncio.timeout(5):
        while True:
            frame: dict[str, Any] = await ws.receive_json()
            if frame["op"] not in (10, 11):
                return frame


def test_a_resume_replays_what_was_sent_while_away_until_the_session_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with FakeDiscord() as fake, aiohttp.ClientSession() as http:
            _world(fake)
            identify = {"op": 2, "d": {"token": TOKEN, "intents": _intents().value}}
            async with http.ws_connect(f"{fake.ws_url}/") as ws:
                await ws.send_json(identify)
                ready = await _next_dispatch(ws)
                assert (ready["t"], ready["s"]) == ("READY", 1)
                assert (await _next_dispatch(ws))["t"] == "GUILD_CREATE"
                await fake.user_says(CHANNEL_ID, ADA_ID, "seen")
                assert (await _next_dispatch(ws))["s"] == 3
                await ws.close(code=4000)  # keeps the session, as a process that died would
            session_id = ready["d"]["session_id"]
            await fake.user_says(CHANNEL_ID, ADA_ID, "while away")
            await fake.user_says(CHANNEL_ID, ADA_ID, "still away")

            resume = {"op": 6, "d": {"token": TOKEN, "session_id": session_id, "seq": 3}}
            async with http.ws_connect(ready["d"]["resume_gateway_url"]) as ws:
                await ws.send_json(resume)
                replayed = [await _next_dispatch(ws) for _ in range(3)]
                await ws.close(code=1000)  # a clean close ends the session
            assert [(f["t"], f["s"]) for f in replayed] == [
                ("MESSAGE_CREATE", 4),
                ("MESSAGE_CREATE", 5),
                ("RESUMED", 6),
            ]
            assert [f["d"]["content"] for f in replayed[:2]] == ["while away", "still away"]

            async with http.ws_connect(f"{fake.ws_url}/resume") as ws:
                await ws.send_json(resume)
                assert await _next_dispatch(ws) == {"op": 9, "d": False, "s": None, "t": None}

    run(scenario())


def test_an_invalidated_session_is_refused_and_a_connected_one_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with FakeDiscord() as fake, aiohttp.ClientSession() as http:
            _world(fake)
            identify = {"op": 2, "d": {"token": TOKEN, "intents": _intents().value}}
            async with http.ws_connect(f"{fake.ws_url}/") as ws:
                await ws.send_json(identify)
                session_id = (await _next_dispatch(ws))["d"]["session_id"]
                await _next_dispatch(ws)  # GUILD_CREATE
                await fake.invalidate_sessions()
                assert await _next_dispatch(ws) == {"op": 9, "d": False, "s": None, "t": None}
            resume = {"op": 6, "d": {"token": TOKEN, "session_id": session_id, "seq": 2}}
            async with http.ws_connect(f"{fake.ws_url}/resume") as ws:
                await ws.send_json(resume)
                assert (await _next_dispatch(ws))["op"] == 9

    run(scenario())


def test_history_after_a_message_is_the_oldest_page_newest_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with running(monkeypatch) as (fake, client):
            said = [await fake.user_says(CHANNEL_ID, ADA_ID, f"m{i}") for i in range(5)]
            after = await client.http.logs_from(CHANNEL_ID, 2, after=said[0]["id"])
            before = await client.http.logs_from(CHANNEL_ID, 2, before=said[4]["id"])
            newest = await client.http.logs_from(CHANNEL_ID, 2)
            assert [m["content"] for m in after] == ["m2", "m1"]
            assert [m["content"] for m in before] == ["m3", "m2"]
            assert [m["content"] for m in newest] == ["m4", "m3"]
            assert "guild_id" not in newest[0]  # history messages do not carry it
            query = fake.calls[-3].query
            assert query == {"limit": "2", "after": said[0]["id"]}

    run(scenario())
