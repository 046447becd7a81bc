"""A fake Discord (a guild, its REST API and gateway) on 127.0.0.1 that records what it gets.

Like Discord, it keeps every session's dispatches with their sequence numbers: a RESUME replays
those after the given `seq`, then RESUMED; a session closed with 1000 or 1001, unknown, or
forgotten by `invalidate_sessions` gets INVALID_SESSION (op 9, d=false) instead. History is
`GET /channels/{id}/messages` with `before`, `after` and `limit`, newest first.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import re
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Self

import pytest
import yarl
from aiohttp import WSMsgType, web
from fakes.files import FileShelf

with warnings.catch_warnings():
    # discord.py imports audioop, deprecated since Python 3.11; filterwarnings=error makes it fatal.
    warnings.simplefilter("ignore", DeprecationWarning)
    import discord.gateway
    import discord.http

from fakes.discord_interactions import Interactions
from fakes.discord_uploads import Uploads

if TYPE_CHECKING:  # discord.types has import cycles that only a type checker untangles
    from discord.types.channel import DMChannel, TextChannel
    from discord.types.member import Member, MemberWithUser
    from discord.types.message import Message
    from discord.types.role import Role
    from discord.types.user import User

__all__ = ["MESSAGE_CONTENT", "PRIVILEGED_INTENTS", "Call", "FakeDiscord"]

Json = dict[str, Any]

GUILD_MESSAGES, GUILD_REACTIONS = 1 << 9, 1 << 10
DIRECT_MESSAGES, DIRECT_REACTIONS = 1 << 12, 1 << 13
MESSAGE_CONTENT = 1 << 15
PRIVILEGED_INTENTS = 1 << 1 | 1 << 8 | MESSAGE_CONTENT  # members, presences, message content

# The intent that carries each event in a guild and in a DM; Discord drops what was not asked for.
_EVENT_INTENTS = {
    "MESSAGE_CREATE": (GUILD_MESSAGES, DIRECT_MESSAGES),
    "MESSAGE_UPDATE": (GUILD_MESSAGES, DIRECT_MESSAGES),
    "MESSAGE_DELETE": (GUILD_MESSAGES, DIRECT_MESSAGES),
    "MESSAGE_REACTION_ADD": (GUILD_REACTIONS, DIRECT_REACTIONS),
    "MESSAGE_REACTION_REMOVE": (GUILD_REACTIONS, DIRECT_REACTIONS),
}
_DISCORD_EPOCH_MS = 1_420_070_400_000
_CLOCK_START_MS = 1_715_677_200_000  # 2024-05-14T09:00Z, the day the recorded payloads were taken
# @everyone may view, send, embed, attach, read history and react, like a fresh guild's default.
_EVERYONE_PERMISSIONS = str(1 << 6 | 1 << 10 | 1 << 11 | 1 << 14 | 1 << 15 | 1 << 16)
_USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")


@dataclass(frozen=True, slots=True)
class Call:
    """One REST request as the fake received it; `path` has no /api/v10 prefix and is unquoted."""

    method: str
    path: str
    json: Any
    query: dict[str, str]
    headers: dict[str, str]
    status: int


@dataclass(frozen=True, slots=True)
class _Failure:
    method: str
    path_prefix: str
    status: int
    retry_after: float
    via: bool


@dataclass(frozen=True, slots=True)
class _Bot:
    token: str
    user: User
    application_id: str


@dataclass(eq=False, slots=True)
class _Session:
    id: str
    bot: _Bot
    intents: int
    ws: web.WebSocketResponse | None
    seq: int = 0
    sent: list[Json] = field(default_factory=list)  # every dispatch, kept for RESUME replay
    ready: bool = False
    resumes: int = 0
    shard: tuple[int, int] | None = None  # (shard id, shard count) from IDENTIFY


@dataclass(frozen=True, slots=True)
class _Req:
    bot: _Bot
    args: dict[str, str]
    body: Json
    query: Mapping[str, str]


_Handler = Callable[[_Req], Awaitable[web.Response]]


def _json(
    data: object, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    # discord.py parses JSON only when Content-Type is exactly application/json (no charset).
    body = json.dumps(data).encode()
    return web.Response(body=body, status=status, headers=headers, content_type="application/json")


def _error(status: int, message: str, code: int = 0) -> web.Response:
    return _json({"message": message, "code": code}, status)


def _frame(op: int, d: object = None) -> Json:
    return {"op": op, "d": d, "s": None, "t": None}


def _emoji(text: str) -> Json:
    name, _, emoji_id = text.partition(":")  # custom emoji travel as name:id
    return {"id": emoji_id or None, "name": name}


def _role(role_id: str, name: str, permissions: str, position: int) -> Role:
    return {
        "id": role_id,
        "name": name,
        "color": 0,
        "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
        "hoist": False,
        "position": position,
        "permissions": permissions,
        "managed": False,
        "mentionable": False,
        "flags": 0,
    }


def _partial_member(member: MemberWithUser) -> Member:
    """The member object inside a guild MESSAGE_CREATE: everything but the user."""
    return {
        "roles": member["roles"],
        "joined_at": member["joined_at"],
        "deaf": False,
        "mute": False,
        "flags": 0,
    }


class FakeDiscord:
    """A guild, its REST API and a gateway; `calls` and `gateway_received` record what clients sent.

    Use as `async with FakeDiscord() as fake:`, then `fake.patch(monkeypatch)` before starting a
    discord.py client. A privileged intent missing from `granted_intents` closes with 4014.
    """

    def __init__(
        self,
        *,
        guild_id: str = "800000000000000401",
        guild_name: str = "c2a-test",
        heartbeat_interval_ms: int = 41_250,
    ) -> None:
        self.guild_id = guild_id
        self.guild_name = guild_name
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.granted_intents = PRIVILEGED_INTENTS  # as toggled in the developer portal
        self.calls: list[Call] = []
        self.gateway_received: list[Json] = []  # every frame clients sent, heartbeats included
        self.gateway_connections: list[str] = []  # path and query of each websocket opened
        self.users: dict[str, User] = {}
        self.members: dict[str, MemberWithUser] = {}
        self.roles: dict[str, Role] = {
            guild_id: _role(guild_id, "@everyone", _EVERYONE_PERMISSIONS, 0)
        }
        self.channels: dict[str, TextChannel] = {}
        self.dm_channels: dict[str, DMChannel] = {}
        self.messages: dict[str, Message] = {}
        self.reactions: set[tuple[str, str, str]] = set()  # (message id, emoji, user id)
        self.url = ""
        self._bots: dict[str, _Bot] = {}
        self.interactions = Interactions(self)  # presses and commands (fakes.discord_interactions)
        self.uploads = Uploads()  # files bots send (fakes.discord_uploads)
        self._sessions: dict[str, _Session] = {}
        self._session_numbers = itertools.count(1)
        self._failures: list[_Failure] = []
        self._nonces: dict[tuple[str, str], str] = {}  # (author id, nonce) -> message id
        self._clock_ms = _CLOCK_START_MS
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.files = FileShelf()  # the attachment CDN, under /attachments/
        channel = r"/channels/(?P<cid>\d+)"
        message = channel + r"/messages/(?P<mid>\d+)"
        reaction = message + r"/reactions/(?P<emoji>[^/]+)/@me"
        self._routes: list[tuple[str, str, _Handler]] = [
            ("GET", r"/users/@me", self._get_me),
            ("GET", r"/oauth2/applications/@me", self._get_application),
            ("GET", r"/gateway(/bot)?", self._get_gateway),
            ("GET", r"/users/(?P<uid>\d+)", self._get_user),
            ("POST", r"/users/@me/channels", self._open_dm),
            ("GET", channel, self._get_channel),
            ("POST", channel + r"/typing", self._typing),
            ("GET", channel + r"/messages", self._history),
            ("POST", channel + r"/messages", self._create_message),
            ("GET", message, self._get_message),
            ("PATCH", message, self._edit_message),
            ("DELETE", message, self._delete_message),
            ("PUT", reaction, self._react),
            ("DELETE", reaction, self._unreact),
        ]

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        app.router.add_get("/", self._gateway)
        app.router.add_get("/resume", self._gateway)  # READY's resume_gateway_url
        self.files.serve(app, "/attachments")
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://", 1)

    def patch(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Point discord.py's REST base and default gateway at this fake for one test."""
        monkeypatch.setattr(discord.http.Route, "BASE", f"{self.url}/api/v10")
        gateway = yarl.URL(f"{self.ws_url}/")
        monkeypatch.setattr(discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", gateway)

    # -- the guild -----------------------------------------------------------------------------

    def add_member(
        self, user_id: str, username: str, *, roles: tuple[str, ...] = (), bot: bool = False
    ) -> MemberWithUser:
        """Add a user and make them a member of the guild with the given role ids."""
        user: User = {
            "id": user_id,
            "username": username,
            "discriminator": "0",
            "global_name": None,
            "avatar": None,
            "public_flags": 0,
        }
        if bot:
            user["bot"] = True
        joined_at = self._iso(self._snowflake())
        member: MemberWithUser = {
            "user": user,
            "roles": list(roles),
            "joined_at": joined_at,
            "deaf": False,
            "mute": False,
            "flags": 0,
            "pending": False,
        }
        self.users[user_id] = user
        self.members[user_id] = member
        return member

    def add_bot(self, token: str, user_id: str, username: str, application_id: str) -> User:
        """Register a bot token and add the bot to the guild with its managed role (tags.bot_id)."""
        role = self.add_role(self._snowflake(), username, managed_by=user_id)
        user = self.add_member(user_id, username, roles=(str(role["id"]),), bot=True)["user"]
        self._bots[token] = _Bot(token, user, application_id)
        return user

    def add_role(
        self, role_id: str, name: str, *, permissions: str = "0", managed_by: str | None = None
    ) -> Role:
        """Add a guild role; `managed_by` makes it the managed role of that bot user id."""
        role = _role(role_id, name, permissions, position=len(self.roles))
        if managed_by is not None:
            role["managed"] = True
            role["tags"] = {"bot_id": managed_by}
        self.roles[role_id] = role
        return role

    def add_channel(
        self, channel_id: str, name: str, *, topic: str = "", overwrites: list[Json] | None = None
    ) -> TextChannel:
        """Add a text channel to the guild; `overwrites` are its permission overwrites, as
        Discord writes them (`{"id", "type": 0 role or 1 member, "allow", "deny"}`)."""
        channel: TextChannel = {
            "id": channel_id,
            "type": 0,
            "name": name,
            "topic": topic,
            "guild_id": self.guild_id,
            "position": len(self.channels),
            "parent_id": None,
            "permission_overwrites": list(overwrites or []),
            "nsfw": False,
            "last_message_id": None,
        }
        self.channels[channel_id] = channel
        return channel

    # -- scripting -----------------------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        path_prefix: str,
        status: int = 429,
        retry_after: float = 0.1,
        *,
        via: bool = True,
    ) -> None:
        """Answer the next matching request with `status`; a 429 is shaped like Discord's own.

        `via=False` drops the Via header, which discord.py reads as a Cloudflare ban.
        """
        self._failures.append(_Failure(method, path_prefix, status, retry_after, via))

    async def user_says(
        self, channel_id: str, author_id: str, content: str, **extra: Any
    ) -> Message:
        """Store a message written by a user and dispatch its MESSAGE_CREATE to every session.

        `extra` is merged like a REST body, so `message_reference={"message_id": ...}` replies.
        """
        body = {"content": content, **extra}
        message = self._new_message(channel_id, self.users[author_id], body)
        await self.dispatch("MESSAGE_CREATE", self.as_event(message))
        return message

    def as_event(self, message: Message) -> Json:
        """The gateway shape of a stored message: guild messages carry guild_id and member."""
        if message["channel_id"] not in self.channels:
            return dict(message)
        event: Json = dict(message) | {"guild_id": self.guild_id}
        member = self.members.get(str(message["author"]["id"]))
        if member is not None:
            event["member"] = _partial_member(member)
        return event

    async def dispatch(self, t: str, d: Json) -> None:
        """Send a dispatch to every session that would receive it, each with its next `s`.

        A session between connections gets it on RESUME, as Discord replays missed events.
        """
        for session in list(self._sessions.values()):
            visible = self._visible(session, t, d)
            if visible is not None:
                await self._send_dispatch(session, t, visible)

    async def dispatch_to_application(self, application_id: str, t: str, d: Json) -> None:
        """Send a dispatch only to the sessions of the bot of `application_id`."""
        for session in list(self._sessions.values()):
            if session.bot.application_id == application_id:
                await self._send_dispatch(session, t, d)

    @property
    def bots(self) -> list[_Bot]:
        return list(self._bots.values())

    async def invalidate_sessions(self) -> None:
        """Forget every session, as Discord does once one has been gone too long: a RESUME of
        one is answered INVALID_SESSION (op 9, d=false), and a connected one is sent that now."""
        for session in list(self._sessions.values()):
            del self._sessions[session.id]
            if session.ws is not None and not session.ws.closed:
                await session.ws.send_json(_frame(9, False))

    async def request_reconnect(self, timeout: float = 5.0) -> None:
        """Send op 7 RECONNECT on every live connection and wait until each session resumed."""
        live = [s for s in self._sessions.values() if s.ws is not None]
        before = {s.id: s.resumes for s in live}
        for session in live:
            assert session.ws is not None
            await session.ws.send_json(_frame(7))
        await self._until(lambda: all(s.resumes > before[s.id] for s in live), timeout)

    async def wait_ready(self, count: int = 1, timeout: float = 5.0) -> None:
        """Wait until `count` connected sessions were sent READY and GUILD_CREATE.

        discord.py fires on_ready later: `guild_ready_timeout` (2 s) after the last GUILD_CREATE.
        """
        sessions = self._sessions.values()
        await self._until(
            lambda: sum(s.ready and s.ws is not None for s in sessions) >= count, timeout
        )

    async def _until(self, predicate: Callable[[], bool], timeout: float) -> None:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(predicate)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # -- gateway -------------------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self.gateway_connections.append(request.path_qs)
        await ws.send_json(_frame(10, {"heartbeat_interval": self.heartbeat_interval_ms}))
        session: _Session | None = None
        async for msg in ws:
            if msg.type is WSMsgType.TEXT:
                frame = json.loads(msg.data)
                self.gateway_received.append(frame)
                session = await self._on_frame(ws, session, frame)
        if session is not None and session.ws is ws:
            session.ws = None
            if ws.close_code in (1000, 1001):  # a clean close ends it; 4000 keeps it resumable
                del self._sessions[session.id]
        return ws

    async def _on_frame(
        self, ws: web.WebSocketResponse, session: _Session | None, frame: Json
    ) -> _Session | None:
        op, d = frame.get("op"), frame.get("d") or {}
        if op == 1:
            await ws.send_json(_frame(11))
        elif op == 2:
            return await self._identify(ws, d)
        elif op == 6:
            return await self._resume(ws, d)
        elif op == 8 and session is not None:
            chunk: Json = {"guild_id": self.guild_id, "members": list(self.members.values())}
            chunk |= {"chunk_index": 0, "chunk_count": 1, "not_found": [], "nonce": d.get("nonce")}
            await self._send_dispatch(session, "GUILD_MEMBERS_CHUNK", chunk)
        return session

    async def _identify(self, ws: web.WebSocketResponse, d: Json) -> _Session | None:
        bot = self._bots.get(d.get("token", ""))
        intents = int(d.get("intents", 0))
        if bot is None:
            await ws.close(code=4004, message=b"Authentication failed.")
            return None
        if intents & PRIVILEGED_INTENTS & ~self.granted_intents:
            await ws.close(code=4014, message=b"Disallowed intent(s).")
            return None
        session = _Session(f"fake-session-{next(self._session_numbers)}", bot, intents, ws)
        shard = d.get("shard")
        if isinstance(shard, list) and len(shard) == 2:
            session.shard = (int(shard[0]), int(shard[1]))
        self._sessions[session.id] = session
        await self._send_dispatch(session, "READY", self._ready_payload(session))
        if self._on_shard(session, self.guild_id):
            await self._send_dispatch(session, "GUILD_CREATE", self._guild_payload())
        session.ready = True
        await self._notify()
        return session

    async def _resume(self, ws: web.WebSocketResponse, d: Json) -> _Session | None:
        session = self._sessions.get(d.get("session_id", ""))
        if session is None or session.bot.token != d.get("token"):
            await ws.send_json(_frame(9, False))
            return None
        seen = d.get("seq") or 0
        for frame in session.sent:  # a list grown meanwhile is walked to its new end
            if frame["s"] > seen:
                await ws.send_json(frame)
        session.ws = ws
        # discord.py writes into RESUMED's d, so it must be an object, as Discord sends it.
        await self._send_dispatch(session, "RESUMED", {"_trace": ["fake-discord"]})
        session.resumes += 1
        await self._notify()
        return session

    async def _send_dispatch(self, session: _Session, t: str, d: object) -> None:
        session.seq += 1
        frame = {"op": 0, "t": t, "s": session.seq, "d": d}
        session.sent.append(frame)
        if session.ws is not None and not session.ws.closed:
            with contextlib.suppress(ConnectionResetError):  # reconnecting: RESUME replays it
                await session.ws.send_json(frame)

    def _on_shard(self, session: _Session, guild_id: str | None) -> bool:
        """Whether the session's shard carries events of `guild_id` (None: DMs, on shard 0)."""
        if session.shard is None:
            return True
        shard_id, count = session.shard
        return shard_id == (0 if guild_id is None else (int(guild_id) >> 22) % count)

    def _visible(self, session: _Session, t: str, d: Json) -> Json | None:
        """The event as this session sees it, or None when its intents or shard exclude it."""
        in_guild = "guild_id" in d
        if not self._on_shard(session, d.get("guild_id")):
            return None
        needed = _EVENT_INTENTS.get(t)
        if needed is not None and not session.intents & needed[0 if in_guild else 1]:
            return None
        # Without Message Content, guild text is blank unless the bot wrote it or is mentioned.
        bot_id = session.bot.user["id"]
        mentioned = any(m.get("id") == bot_id for m in d.get("mentions", []))
        own = d.get("author", {}).get("id") == bot_id
        blank = in_guild and not (own or mentioned or session.intents & MESSAGE_CONTENT)
        if blank and t in ("MESSAGE_CREATE", "MESSAGE_UPDATE"):
            return d | {"content": "", "embeds": [], "attachments": [], "components": []}
        return d

    def _ready_payload(self, session: _Session) -> Json:
        user = session.bot.user | {"verified": True, "mfa_enabled": False, "flags": 0}
        return {
            "v": 10,
            "user": user,
            "guilds": [{"id": self.guild_id, "unavailable": True}]
            if self._on_shard(session, self.guild_id)
            else [],
            "session_id": session.id,
            "session_type": "normal",
            "resume_gateway_url": f"{self.ws_url}/resume",
            "application": {"id": session.bot.application_id, "flags": 0},
            "private_channels": [],
            "_trace": ["fake-discord"],
        } | ({"shard": list(session.shard)} if session.shard is not None else {})

    def _guild_payload(self) -> Json:
        guild: Json = {"id": self.guild_id, "name": self.guild_name, "icon": None}
        guild |= {"owner_id": next(iter(self.members), self.guild_id), "unavailable": False}
        guild |= {"large": False, "member_count": len(self.members), "preferred_locale": "en-US"}
        guild |= {"joined_at": self._iso(self._snowflake()), "system_channel_id": None}
        guild |= {"roles": list(self.roles.values()), "channels": list(self.channels.values())}
        guild |= {"members": list(self.members.values())}
        empty = ["threads", "presences", "voice_states", "emojis", "stickers", "features"]
        empty += ["stage_instances", "guild_scheduled_events", "soundboard_sounds"]
        return guild | {key: [] for key in empty}

    # -- REST plumbing -------------------------------------------------------------------------

    async def _rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        body: Any = None
        if request.content_type == "application/json":
            body = await request.json()
        elif request.content_type == "multipart/form-data":  # uploads carry JSON in payload_json
            body = await self.uploads.read(request, path, self.url)
        response = await self._respond(request, path, body if isinstance(body, dict) else {})
        query, headers = dict(request.query), dict(request.headers)
        self.calls.append(Call(request.method, path, body, query, headers, response.status))
        return response

    async def _respond(self, request: web.Request, path: str, body: Json) -> web.Response:
        for failure in self._failures:
            if failure.method == request.method and path.startswith(failure.path_prefix):
                self._failures.remove(failure)
                return _failure_response(failure)
        answered = await self.interactions.respond(request.method, path, body, request.query)
        if answered is not None:  # an interaction is answered with its token, not the bot's
            status, data = answered
            return web.Response(status=status) if data is None else _json(data, status)
        bot = self._bots.get(request.headers.get("Authorization", "").removeprefix("Bot "))
        if bot is None:
            return _error(401, "401: Unauthorized")
        for method, pattern, handler in self._routes:
            match = re.fullmatch(pattern, path)
            if method == request.method and match is not None:
                return await handler(_Req(bot, match.groupdict(), body, request.query))
        return _error(404, "404: Not Found")

    # -- REST routes ---------------------------------------------------------------------------

    async def _get_me(self, req: _Req) -> web.Response:
        return _json(req.bot.user)

    async def _get_application(self, req: _Req) -> web.Response:
        app: Json = {"id": req.bot.application_id, "name": req.bot.user["username"]}
        app |= {"description": "", "icon": None, "verify_key": "0" * 64, "flags": 0}
        app |= {"bot_public": False, "bot_require_code_grant": False}
        return _json(app | {"owner": req.bot.user, "bot": req.bot.user})

    async def _get_gateway(self, req: _Req) -> web.Response:
        limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
        return _json({"url": self.ws_url, "shards": 1, "session_start_limit": limit})

    async def _get_user(self, req: _Req) -> web.Response:
        user = self.users.get(req.args["uid"])
        return _json(user) if user else _error(404, "Unknown User", 10013)

    async def _open_dm(self, req: _Req) -> web.Response:
        recipient = self.users.get(str(req.body.get("recipient_id")))
        if recipient is None:
            return _error(400, "Invalid Recipient(s)", 50033)
        for existing in self.dm_channels.values():
            if existing["recipients"][0]["id"] == recipient["id"]:
                return _json(existing)
        dm: DMChannel = {
            "id": self._snowflake(),
            "type": 1,
            "name": "",
            "last_message_id": None,
            "recipients": [recipient],
        }
        self.dm_channels[str(dm["id"])] = dm
        return _json(dm)

    async def _get_channel(self, req: _Req) -> web.Response:
        channel = self.channels.get(req.args["cid"]) or self.dm_channels.get(req.args["cid"])
        return _json(channel) if channel else _error(404, "Unknown Channel", 10003)

    async def _typing(self, req: _Req) -> web.Response:
        return web.Response(status=204)

    async def _history(self, req: _Req) -> web.Response:
        limit = int(req.query.get("limit", 50))
        before, after = int(req.query.get("before", 1 << 63)), int(req.query.get("after", 0))
        found = sorted(
            (m for m in self.messages.values() if m["channel_id"] == req.args["cid"]),
            key=lambda m: int(m["id"]),
        )
        found = [m for m in found if after < int(m["id"]) < before]
        page = found[:limit] if "after" in req.query else found[-limit:]
        return _json(page[::-1])  # Discord answers newest first

    async def _create_message(self, req: _Req) -> web.Response:
        cid = req.args["cid"]
        if cid not in self.channels and cid not in self.dm_channels:
            return _error(404, "Unknown Channel", 10003)
        nonce_key = (str(req.bot.user["id"]), str(req.body.get("nonce")))
        if req.body.get("enforce_nonce") and nonce_key in self._nonces:
            return _json(self.messages[self._nonces[nonce_key]])
        message = self._new_message(cid, req.bot.user, req.body)
        if "nonce" in req.body:
            self._nonces[nonce_key] = str(message["id"])
        await self.dispatch("MESSAGE_CREATE", self.as_event(message))
        return _json(message)

    async def _get_message(self, req: _Req) -> web.Response:
        message = self.messages.get(req.args["mid"])
        if message is None or message["channel_id"] != req.args["cid"]:
            return _error(404, "Unknown Message", 10008)
        return _json(message)

    async def _edit_message(self, req: _Req) -> web.Response:
        message = self.messages.get(req.args["mid"])
        if message is None:
            return _error(404, "Unknown Message", 10008)
        if message["author"]["id"] != req.bot.user["id"]:
            return _error(403, "Cannot edit a message authored by another user", 50005)
        return _json(await self.edit_stored(message["id"], req.body))

    async def edit_stored(self, message_id: str, body: Json) -> Message:
        """Apply an edit's `content`, `embeds` and `components` to a stored message, and
        dispatch its MESSAGE_UPDATE."""
        message = self.messages[message_id]
        if "content" in body:
            message["content"] = body["content"] or ""
            message["mentions"] = self._mentions(message["content"])
        for key in ("embeds", "components"):
            if key in body:
                message[key] = body[key] or []
        message["edited_timestamp"] = self._iso(self._snowflake())
        await self.dispatch("MESSAGE_UPDATE", self.as_event(message))
        return message

    async def _delete_message(self, req: _Req) -> web.Response:
        message = self.messages.pop(req.args["mid"], None)
        if message is None:
            return _error(404, "Unknown Message", 10008)
        event = self.as_event(message)
        deleted: Json = {k: event[k] for k in ("id", "channel_id", "guild_id") if k in event}
        await self.dispatch("MESSAGE_DELETE", deleted)
        return web.Response(status=204)

    async def _react(self, req: _Req) -> web.Response:
        return await self._reaction(req, "MESSAGE_REACTION_ADD")

    async def _unreact(self, req: _Req) -> web.Response:
        return await self._reaction(req, "MESSAGE_REACTION_REMOVE")

    async def _reaction(self, req: _Req, t: str) -> web.Response:
        message = self.messages.get(req.args["mid"])
        if message is None:
            return _error(404, "Unknown Message", 10008)
        user_id, emoji = str(req.bot.user["id"]), req.args["emoji"]
        event: Json = {
            "user_id": user_id,
            "channel_id": req.args["cid"],
            "message_id": message["id"],
        }
        event |= {"emoji": _emoji(emoji), "burst": False, "type": 0}
        if req.args["cid"] in self.channels:
            event["guild_id"] = self.guild_id
        if t == "MESSAGE_REACTION_ADD":
            self.reactions.add((req.args["mid"], emoji, user_id))
            event["message_author_id"] = message["author"]["id"]
            if "guild_id" in event:
                event["member"] = self.members[user_id]
        else:
            self.reactions.discard((req.args["mid"], emoji, user_id))
        await self.dispatch(t, event)
        return web.Response(status=204)

    # -- messages and ids ----------------------------------------------------------------------

    def _new_message(self, channel_id: str, author: User, body: Json) -> Message:
        message_id = self._snowflake()
        content = str(body.get("content") or "")
        message: Message = {
            "id": message_id,
            "type": 0,
            "channel_id": channel_id,
            "author": author,
            "content": content,
            "timestamp": self._iso(message_id),
            "edited_timestamp": None,
            "tts": bool(body.get("tts")),
            "pinned": False,
            "mention_everyone": "@everyone" in content or "@here" in content,
            "mentions": self._mentions(content),
            "mention_roles": _ROLE_MENTION.findall(content),
            "attachments": list(body.get("attachments") or []),
            "embeds": body.get("embeds") or [],
            "components": body.get("components") or [],
            "flags": int(body.get("flags") or 0),
        }
        if "nonce" in body:
            message["nonce"] = body["nonce"]
        replied_to = str((body.get("message_reference") or {}).get("message_id"))
        if replied_to in self.messages:
            message["type"] = 19
            message["message_reference"] = {"type": 0, "channel_id": channel_id}
            message["message_reference"]["message_id"] = replied_to
            message["referenced_message"] = self.messages[replied_to]
        self.messages[message_id] = message
        return message

    def _mentions(self, content: str) -> list[Any]:
        return [self.users[i] for i in _USER_MENTION.findall(content) if i in self.users]

    def _snowflake(self) -> str:
        """A new id whose timestamp is a virtual clock advancing one millisecond per id."""
        self._clock_ms += 1
        return str((self._clock_ms - _DISCORD_EPOCH_MS) << 22)

    @staticmethod
    def _iso(snowflake: str) -> str:
        ms = (int(snowflake) >> 22) + _DISCORD_EPOCH_MS
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="microseconds")


def _failure_response(failure: _Failure) -> web.Response:
    if failure.status != 429:
        return _error(failure.status, f"{failure.status}: scripted failure")
    headers = {"Retry-After": str(math.ceil(failure.retry_after)), "X-RateLimit-Limit": "5"}
    headers |= {"X-RateLimit-Remaining": "0", "X-RateLimit-Scope": "user"}
    headers |= {"X-RateLimit-Reset": f"{time.time() + failure.retry_after:.3f}"}
    headers |= {"X-RateLimit-Reset-After": f"{failure.retry_after:.3f}"}
    headers |= {"X-RateLimit-Bucket": "fake-bucket"}
    if failure.via:  # without Via, discord.py takes a 429 for a Cloudflare ban and raises
        headers["Via"] = "1.1 google"
    body = {"message": "You are being rate limited.", "retry_after": failure.retry_after}
    return _json(body | {"global": False}, 429, headers)
