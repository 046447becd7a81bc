"""A fake Slack on 127.0.0.1: Web API, Socket Mode and signing, recording what it receives."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import itertools
import json
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from aiohttp import WSCloseCode, WSMsgType, web
from fakes.files import FileShelf
from fakes.slack_interactive import APP_ID, block_actions
from fakes.slack_uploads import Uploads

__all__ = ["Bot", "Call", "FakeSlack", "SlackWorkspace", "sign"]

JsonDict = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Bot:
    """The identity `auth.test` reports for a bot token."""

    user_id: str
    bot_id: str
    team_id: str


class _SlackError(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class SlackWorkspace:
    """Bots, users, channels and messages, answering Web API calls in Slack's response shapes.

    Messages the bot posts, and ones a test seeds with `add_message`, are kept per channel in
    `messages` (oldest first) and served back by the conversations methods. Channels need no
    setup: an unknown one is simply empty. `xoxb-test` is a bot token from the start.
    """

    def __init__(self) -> None:
        self.bots: dict[str, Bot] = {"xoxb-test": Bot("U0BOT", "B0BOT", "T111")}
        self.users: dict[str, JsonDict] = {}
        self.members: dict[str, list[str]] = {}
        self.usergroups: dict[str, list[str]] = {}
        self.messages: dict[str, list[JsonDict]] = {}
        self.reactions: set[tuple[str, str, str, str]] = set()  # channel, ts, name, user
        self._ts_numbers = itertools.count(1)
        self._ts_shift = 0  # microseconds every ts moved forward, past a newer thread's parent
        self._methods: dict[str, Callable[[JsonDict, Bot], JsonDict]] = {
            "auth.test": self._auth_test,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.delete": self._delete,
            "chat.postEphemeral": self._post_ephemeral,
            "reactions.add": self._reactions_add,
            "reactions.remove": self._reactions_remove,
            "conversations.history": self._history,
            "conversations.replies": self._replies,
            "conversations.members": self._members,
            "users.info": self._users_info,
            "usergroups.users.list": self._usergroup_users,
            "assistant.threads.setStatus": lambda params, bot: {"ok": True},
        }

    def add_bot(self, token: str, user_id: str, bot_id: str, team_id: str = "T111") -> None:
        """Make `token` a valid bot token with this identity (`xoxb-test` exists already)."""
        self.bots[token] = Bot(user_id, bot_id, team_id)

    def add_user(
        self, user_id: str, name: str, *, is_bot: bool = False, team_id: str = "T111"
    ) -> None:
        """Make `users.info` know `user_id`."""
        profile = {"real_name": name, "display_name": name}
        self.users[user_id] = {
            "id": user_id,
            "team_id": team_id,
            "name": name.lower(),
            "real_name": name,
            "deleted": False,
            "is_bot": is_bot,
            "profile": profile,
        }

    def add_message(
        self,
        channel: str,
        text: str,
        *,
        user: str,
        thread_ts: str | None = None,
        ts: str | None = None,
    ) -> str:
        """Store a message as if someone had posted it; returns its ts."""
        message: JsonDict = {"type": "message", "user": user, "text": text}
        return self._store(channel, message, thread_ts, ts)

    def answer(self, method: str, params: JsonDict, token: str | None) -> JsonDict:
        """Apply one bot-token call and return Slack's body; failures are `ok: false` bodies."""
        try:
            handler = self._methods.get(method)
            if handler is None:
                raise _SlackError("unknown_method")
            if token is None:
                raise _SlackError("not_authed")
            bot = self.bots.get(token)
            if bot is None:
                raise _SlackError("invalid_auth")
            return handler(params, bot)
        except _SlackError as error:
            return {"ok": False, "error": error.code}

    def _auth_test(self, params: JsonDict, bot: Bot) -> JsonDict:
        return {
            "ok": True,
            "url": "https://fake.slack.com/",
            "team": "Fake Team",
            "user": "bot",
            "team_id": bot.team_id,
            "user_id": bot.user_id,
            "bot_id": bot.bot_id,
            "is_enterprise_install": False,
        }

    def _post_message(self, params: JsonDict, bot: Bot) -> JsonDict:
        channel = _arg(params, "channel", "channel_not_found")
        if not params.get("text") and not params.get("blocks"):
            raise _SlackError("no_text")
        message = {"type": "message", "user": bot.user_id, "bot_id": bot.bot_id, "app_id": APP_ID}
        message.update({k: params[k] for k in ("text", "blocks", "metadata") if k in params})
        message["team"] = bot.team_id
        ts = self._store(channel, message, params.get("thread_ts") or None, None)
        return {"ok": True, "channel": channel, "ts": ts, "message": message}

    def _update(self, params: JsonDict, bot: Bot) -> JsonDict:
        channel = _arg(params, "channel", "channel_not_found")
        message = self._find(channel, _arg(params, "ts", "message_not_found"))
        message.update({k: params[k] for k in ("text", "blocks", "metadata") if k in params})
        message["edited"] = {"user": bot.user_id, "ts": self._next_ts()}
        text = message.get("text", "")
        return {
            "ok": True,
            "channel": channel,
            "ts": message["ts"],
            "text": text,
            "message": message,
        }

    def _delete(self, params: JsonDict, bot: Bot) -> JsonDict:
        channel = _arg(params, "channel", "channel_not_found")
        message = self._find(channel, _arg(params, "ts", "message_not_found"))
        self.messages[channel].remove(message)
        return {"ok": True, "channel": channel, "ts": message["ts"]}

    def _post_ephemeral(self, params: JsonDict, bot: Bot) -> JsonDict:
        _arg(params, "channel", "channel_not_found")
        _arg(params, "user", "user_not_in_channel")
        return {"ok": True, "message_ts": self._next_ts()}

    def _reactions_add(self, params: JsonDict, bot: Bot) -> JsonDict:
        key = self._reaction(params, bot)
        if key in self.reactions:
            raise _SlackError("already_reacted")
        self.reactions.add(key)
        return {"ok": True}

    def _reactions_remove(self, params: JsonDict, bot: Bot) -> JsonDict:
        key = self._reaction(params, bot)
        if key not in self.reactions:
            raise _SlackError("no_reaction")
        self.reactions.remove(key)
        return {"ok": True}

    def _history(self, params: JsonDict, bot: Bot) -> JsonDict:
        """A channel's top-level messages between `oldest` and `latest`, newest first, `limit`
        at a time (`cursor` for the next page), as Slack answers."""
        channel = _arg(params, "channel", "channel_not_found")
        stored = self.messages.get(channel, [])
        top_level = [m for m in stored if m.get("thread_ts", m["ts"]) == m["ts"]]
        newest_first = [m for m in reversed(top_level) if _in_window(m["ts"], params)]
        return _page("messages", newest_first, params)

    def _replies(self, params: JsonDict, bot: Bot) -> JsonDict:
        """A thread oldest first, `oldest`/`latest`/`limit`/`cursor` as in history; like
        Slack, the parent message comes first on every first page, inside the window or not."""
        channel = _arg(params, "channel", "channel_not_found")
        ts = _arg(params, "ts", "thread_not_found")
        found = [m for m in self.messages.get(channel, []) if ts in (m["ts"], m.get("thread_ts"))]
        if not found:
            raise _SlackError("thread_not_found")
        parent = [m for m in found if m["ts"] == ts]
        replies = [m for m in found if m["ts"] != ts and _in_window(m["ts"], params)]
        if params.get("cursor"):
            return _page("messages", replies, params)
        return _page("messages", replies, params, first=parent)

    def _members(self, params: JsonDict, bot: Bot) -> JsonDict:
        channel = _arg(params, "channel", "channel_not_found")
        return _page("members", self.members.get(channel, []), params)

    def _users_info(self, params: JsonDict, bot: Bot) -> JsonDict:
        user_id = _arg(params, "user", "user_not_found")
        bots = {b.user_id: b for b in self.bots.values()}
        if user_id in self.users:
            return {"ok": True, "user": self.users[user_id]}
        if user_id in bots:
            profile = {"real_name": "bot", "display_name": "bot", "bot_id": bots[user_id].bot_id}
            user = {"id": user_id, "team_id": bots[user_id].team_id, "name": "bot", "is_bot": True}
            return {"ok": True, "user": {**user, "deleted": False, "profile": profile}}
        raise _SlackError("user_not_found")

    def _usergroup_users(self, params: JsonDict, bot: Bot) -> JsonDict:
        group = _arg(params, "usergroup", "no_such_subteam")
        if group not in self.usergroups:
            raise _SlackError("no_such_subteam")
        return {"ok": True, "users": self.usergroups[group]}

    # -- storage -----------------------------------------------------------------------------

    def _next_ts(self, after: str | None = None) -> str:
        """The next message ts; later than `after` (a thread's parent), as a reply's is on
        Slack, by moving every later ts forward too."""
        micros = 1767225600_000000 + next(self._ts_numbers) + self._ts_shift
        if after is not None and micros <= round(float(after) * 1_000_000):
            self._ts_shift += round(float(after) * 1_000_000) - micros + 1
            micros = round(float(after) * 1_000_000) + 1
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"

    def _store(self, channel: str, message: JsonDict, thread_ts: str | None, ts: str | None) -> str:
        message["ts"] = ts or self._next_ts(after=thread_ts)
        stored = self.messages.setdefault(channel, [])
        if thread_ts is not None:
            message["thread_ts"] = thread_ts
            parent = next((m for m in stored if m["ts"] == thread_ts), None)
            if parent is not None:
                parent["thread_ts"] = thread_ts
                parent["reply_count"] = parent.get("reply_count", 0) + 1
                parent["latest_reply"] = message["ts"]
        stored.append(message)
        stored.sort(key=lambda m: float(m["ts"]))
        return str(message["ts"])

    def _find(self, channel: str, ts: str) -> JsonDict:
        for message in self.messages.get(channel, []):
            if message["ts"] == ts:
                return message
        raise _SlackError("message_not_found")

    def _reaction(self, params: JsonDict, bot: Bot) -> tuple[str, str, str, str]:
        channel = _arg(params, "channel", "channel_not_found")
        ts = _arg(params, "timestamp", "message_not_found")
        return channel, ts, _arg(params, "name", "invalid_name"), bot.user_id


def _arg(params: JsonDict, name: str, error: str) -> str:
    value = params.get(name)
    if not value:
        raise _SlackError(error)
    return str(value)


def _in_window(ts: str, params: JsonDict) -> bool:
    oldest, latest = float(params.get("oldest") or 0), float(params.get("latest") or "inf")
    if str(params.get("inclusive", "0")).lower() in ("1", "true"):
        return oldest <= float(ts) <= latest
    return oldest < float(ts) < latest


def _page(key: str, items: list[Any], params: JsonDict, first: list[Any] | None = None) -> JsonDict:
    """One page of `items` (after `first`, which only a first page has): `limit` of them (at
    most 1000, as Slack caps it) from where `cursor` points; `next_cursor` is empty on the
    last page. A cursor this fake did not give out is Slack's `invalid_cursor`."""
    limit = min(int(params.get("limit") or 100), 1000)
    start = _offset(str(params.get("cursor") or ""))
    head = list(first or [])
    page = head + items[start : start + limit - len(head)]
    end = start + len(page) - len(head)
    more = end < len(items)
    cursor = base64.b64encode(f"offset:{end}".encode()).decode() if more else ""
    return {"ok": True, key: page, "has_more": more, "response_metadata": {"next_cursor": cursor}}


def _offset(cursor: str) -> int:
    if not cursor:
        return 0
    try:
        text = base64.b64decode(cursor, validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        raise _SlackError("invalid_cursor") from None
    word, _, number = text.partition(":")
    if word != "offset" or not number.isdigit():
        raise _SlackError("invalid_cursor")
    return int(number)


def sign(body: bytes, secret: str, timestamp: int) -> dict[str, str]:
    """Headers Slack adds to an HTTP Events API request: `v0=` HMAC-SHA256 of `v0:{ts}:{body}`."""
    base = b"v0:" + str(timestamp).encode() + b":" + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Signature": f"v0={digest}", "X-Slack-Request-Timestamp": str(timestamp)}


@dataclass(frozen=True, slots=True)
class Call:
    """One Web API request as received: parameters from query, form and JSON merged."""

    method: str
    params: JsonDict
    token: str | None


@dataclass(frozen=True, slots=True)
class _Failure:
    status: int
    error: str
    headers: dict[str, str]
    timeout_after_accept: bool


@dataclass(frozen=True, slots=True)
class _Connection:
    app_token: str
    ws: web.WebSocketResponse


class FakeSlack(SlackWorkspace):
    """A `SlackWorkspace` served by aiohttp on an OS-picked port; point the real clients at it::

        async with FakeSlack() as slack:
            client = AsyncWebClient(base_url=slack.api_url, token="xoxb-test")
            handler = AsyncSocketModeHandler(AsyncApp(client=client), "xapp-1-test")
            await handler.connect_async()
            await slack.wait_connected(1)
            ack = await slack.send_event(body)
            await handler.close_async()  # before leaving the block, or the client reconnects

    Every Web API call lands in `calls`, every Socket Mode acknowledgement in `acks`. Waits are
    bounded by `wait_timeout` and raise `TimeoutError` naming what did not happen.

    With `redeliveries`, an event pushed by `push_event_to_each` that none of its envelopes
    had acknowledged is pushed again, as Slack does (after about 1, 5 and 30 minutes), each
    delay in seconds after the previous push: in new envelopes, with `retry_attempt` and
    `retry_reason` set, over every connection of the app open then. `retries` maps each such
    envelope to the first envelope of its event.
    """

    def __init__(self, *, wait_timeout: float = 5.0, redeliveries: Sequence[float] = ()) -> None:
        super().__init__()
        self.wait_timeout = wait_timeout
        self.redeliveries = tuple(redeliveries)
        self.retries: dict[str, str] = {}
        self._redelivering: set[asyncio.Task[None]] = set()
        self.port = 0
        self.calls: list[Call] = []
        self.api_peers: list[object] = []  # each Web API request's client address: its connection
        self.acks: list[JsonDict] = []
        self._failures: dict[str, deque[_Failure]] = {}
        self._connections: list[_Connection] = []
        self._socket_tokens: dict[int, str] = {}
        self._socket_numbers = itertools.count(1)
        self._changed = asyncio.Event()
        self._stopping = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.files = FileShelf(token_required=True)  # url_private, under /files-pri/
        self.uploads = Uploads(lambda: f"http://127.0.0.1:{self.port}", self._store)
        self._methods.update(self.uploads.methods())

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_get("/socket/{number}", self._socket)
        self.files.serve(app, "/files-pri")
        self.uploads.serve(app)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stopping.set()  # releases stalled requests
        for task in self._redelivering:
            task.cancel()
        await asyncio.gather(*self._redelivering, return_exceptions=True)
        for connection in self._connections:
            await connection.ws.close(code=WSCloseCode.GOING_AWAY)
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        """The `base_url` for `AsyncWebClient`; it ends with a slash, as slack-sdk requires."""
        return f"http://127.0.0.1:{self.port}/api/"

    # -- scripting ---------------------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        *,
        status: int = 200,
        error: str | None = None,
        headers: dict[str, str] | None = None,
        timeout_after_accept: bool = False,
    ) -> None:
        """Make the next call to `method` fail; queued failures are used in order.

        By default the answer is `{"ok": false, "error": ...}` with `status` (429 means
        `ratelimited`). With `timeout_after_accept` the call is applied (recorded, message stored)
        and then never answered until the fake stops: the client times out on a send that happened.
        """
        code = error or {200: "fatal_error", 429: "ratelimited"}.get(status, "internal_error")
        failure = _Failure(status, code, dict(headers or {}), timeout_after_accept)
        self._failures.setdefault(method, deque()).append(failure)

    def calls_to(self, method: str) -> list[Call]:
        """The recorded calls to one method, in order."""
        return [call for call in self.calls if call.method == method]

    # -- Socket Mode -------------------------------------------------------------------------

    async def wait_connected(self, n: int = 1) -> None:
        """Wait until `n` Socket Mode connections in total have been greeted with `hello`."""
        await self._wait_until(lambda: len(self._connections) >= n, f"{n} connection(s)")

    async def send_event(
        self,
        payload: JsonDict,
        *,
        app_token: str | None = None,
        envelope_type: str = "events_api",
        retry_attempt: int = 0,
        retry_reason: str = "",
    ) -> JsonDict:
        """Push an envelope over the newest open connection and return the client's ack."""
        envelope_id = await self.push_event(
            payload,
            app_token=app_token,
            envelope_type=envelope_type,
            retry_attempt=retry_attempt,
            retry_reason=retry_reason,
        )
        await self._wait_until(lambda: self._ack(envelope_id) is not None, f"ack of {envelope_id}")
        ack = self._ack(envelope_id)
        assert ack is not None
        return ack

    async def push_event(
        self,
        payload: JsonDict,
        *,
        app_token: str | None = None,
        envelope_type: str = "events_api",
        retry_attempt: int = 0,
        retry_reason: str = "",
    ) -> str:
        """Push an envelope over the newest open connection without waiting for the ack;
        returns its envelope id (the ack, when the client sends one, lands in `acks`)."""
        envelope_id = str(uuid.uuid4())
        envelope: JsonDict = {"envelope_id": envelope_id, "type": envelope_type}
        if envelope_type == "events_api":
            envelope.update(accepts_response_payload=False, retry_attempt=retry_attempt)
            envelope["retry_reason"] = retry_reason
        else:  # interactive and slash_commands envelopes carry no retry fields
            envelope["accepts_response_payload"] = True
        envelope["payload"] = payload
        await (await self._open_connection(app_token)).ws.send_json(envelope)
        return envelope_id

    async def push_event_to_each(self, payload: JsonDict, *, app_token: str) -> list[str]:
        """Push the event over every open connection of the app (Socket Mode allows several
        per app), each in an envelope of its own; returns the envelope ids. With
        `redeliveries`, it comes again until one of its envelopes is acknowledged."""
        ids = await self._push_to_each(payload, app_token, 0)
        if self.redeliveries and ids:
            task = asyncio.create_task(self._redeliver(payload, app_token, ids))
            self._redelivering.add(task)
            task.add_done_callback(self._redelivering.discard)
        return ids

    async def _push_to_each(self, payload: JsonDict, app_token: str, attempt: int) -> list[str]:
        live = [c for c in self._connections if not c.ws.closed and c.app_token == app_token]
        ids = []
        for connection in live:
            envelope_id = str(uuid.uuid4())
            envelope = {"envelope_id": envelope_id, "type": "events_api", "payload": payload}
            reason = "timeout" if attempt else ""
            envelope.update(accepts_response_payload=False, retry_attempt=attempt)
            envelope["retry_reason"] = reason
            with contextlib.suppress(ConnectionError):
                await connection.ws.send_json(envelope)
                ids.append(envelope_id)
        return ids

    async def _redeliver(self, payload: JsonDict, app_token: str, ids: list[str]) -> None:
        """Push the event again after each of `redeliveries` while none of `ids` (the first
        push's envelopes and the retries') is acknowledged."""
        first = ids[0]
        sent = set(ids)
        for attempt, delay in enumerate(self.redeliveries, start=1):
            await asyncio.sleep(delay)
            if any(a.get("envelope_id") in sent for a in self.acks):
                return
            for envelope_id in await self._push_to_each(payload, app_token, attempt):
                self.retries[envelope_id] = first
                sent.add(envelope_id)

    async def press(
        self, channel: str, ts: str, action_id: str, *, user: str, app_token: str | None = None
    ) -> JsonDict:
        """Press the button `action_id` of the stored message `ts` as `user`: Slack's
        interactive `block_actions` payload over Socket Mode; returns the client's ack."""
        return await self.send_event(
            block_actions(self._find(channel, ts), channel, action_id, user),
            app_token=app_token,
            envelope_type="interactive",
        )

    async def send_disconnect(
        self, reason: str = "refresh_requested", *, app_token: str | None = None
    ) -> None:
        """Send Slack's `disconnect` message; the client should reconnect via a new URL."""
        message = {"type": "disconnect", "reason": reason, "debug_info": {"host": "applink-fake"}}
        await (await self._open_connection(app_token)).ws.send_json(message)

    async def _open_connection(self, app_token: str | None) -> _Connection:
        def newest() -> _Connection | None:
            live = [
                c for c in self._connections if not c.ws.closed and app_token in (None, c.app_token)
            ]
            return live[-1] if live else None

        await self._wait_until(lambda: newest() is not None, "an open connection")
        connection = newest()
        assert connection is not None
        return connection

    def _ack(self, envelope_id: str) -> JsonDict | None:
        return next((a for a in self.acks if a.get("envelope_id") == envelope_id), None)

    async def _wait_until(self, predicate: Callable[[], bool], what: str) -> None:
        try:
            async with asyncio.timeout(self.wait_timeout):
                while not predicate():
                    await self._changed.wait()
        except TimeoutError:
            raise TimeoutError(f"FakeSlack: waited {self.wait_timeout}s for {what}") from None

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        number = int(request.match_info["number"])
        app_token = self._socket_tokens.get(number)
        if app_token is None:
            raise web.HTTPNotFound()
        ws = web.WebSocketResponse(timeout=1.0)  # bounded close handshake
        await ws.prepare(request)
        connection = _Connection(app_token, ws)
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": 1 + sum(not c.ws.closed for c in self._connections),
                "debug_info": {
                    "host": "applink-fake",
                    "build_number": 1,
                    "approximate_connection_time": 18060,
                },
                "connection_info": {"app_id": APP_ID},
            }
        )
        self._connections.append(connection)
        self._notify()
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                data = json.loads(message.data)
                if isinstance(data, dict) and "envelope_id" in data:
                    self.acks.append(data)
                self._notify()
        self._notify()
        return ws

    # -- Web API -----------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        params: JsonDict = dict(request.query)
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.body_exists:
            params.update({k: v for k, v in (await request.post()).items() if isinstance(v, str)})
        token = params.pop("token", None)
        authorization = request.headers.get("Authorization", "")
        if authorization.startswith("Bearer "):
            token = authorization.removeprefix("Bearer ")
        self.calls.append(Call(method, params, token))
        self.api_peers.append(request.transport and request.transport.get_extra_info("peername"))
        queued = self._failures.get(method)
        failure = queued.popleft() if queued else None
        if failure is not None and not failure.timeout_after_accept:
            body = {"ok": False, "error": failure.error}
            return web.json_response(body, status=failure.status, headers=failure.headers)
        result = self._apply(method, params, token)
        self._notify()
        if failure is not None:
            await self._stopping.wait()
            raise web.HTTPServiceUnavailable()
        return web.json_response(result)

    def _apply(self, method: str, params: JsonDict, token: str | None) -> JsonDict:
        if method != "apps.connections.open":
            return self.answer(method, params, token)
        if token is None:
            return {"ok": False, "error": "not_authed"}
        if not token.startswith("xapp-"):
            return {"ok": False, "error": "not_allowed_token_type"}
        number = next(self._socket_numbers)
        self._socket_tokens[number] = token
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket/{number}"}
