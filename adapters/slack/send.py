"""Slack's outbound side: `SlackSender` performs what the outbox holds (messages, reactions,
status, edits, deletes) with one slack-sdk `AsyncWebClient` per agent, and `verify` checks each
agent's token at startup.

Nothing here may post a message twice. slack-sdk's own retries are off (`retry_handlers=[]`),
because its connection-error retry would resend `chat.postMessage`. A 429 is retried here, by
tenacity, only when its `Retry-After` is short; a longer one, an outage, or a network error
before the request left becomes `TransientSendError` and the outbox tries again later. When a
post may have landed (a timeout or dropped connection after the request left, a 5xx), the
outcome is unknown: `SendOutcomeUnknown` is raised, the outbox marks the action ambiguous, and
`find` looks for it (every message carries its idempotency key in Slack message metadata)
before anything is sent again. Slack's refusals (`invalid_auth`, `channel_not_found`,
`not_in_channel`, ...) are `PermanentSendError` with one line that says what to do.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from adapters.slack.glyphs import normalise_emoji
from adapters.slack.live import api_base
from adapters.slack.manifest import SlackAgent, SlackWorkspace
from adapters.slack.render import (
    Placement,
    message_ref,
    place,
    render_message,
)
from core.clock import Clock
from core.errors import (
    ManifestError,
    PermanentSendError,
    RenderError,
    SendOutcomeUnknown,
    TransientSendError,
)
from core.events import ChatEvent
from core.manifest import Workspace
from core.signals import GlyphMap, Signal, superseded_by

__all__ = [
    "BOT_EVENT_SCOPES",
    "METADATA_EVENT_TYPE",
    "METHOD_SCOPES",
    "REQUIRED_SCOPES",
    "ChannelPacer",
    "Lookup",
    "SlackSender",
    "api_error",
    "scope_problem",
    "verify",
]

log = logging.getLogger(__name__)

_HISTORY = frozenset({"channels:history", "groups:history", "im:history", "mpim:history"})
METHOD_SCOPES: Mapping[str, frozenset[str]] = {
    "auth.test": frozenset(),
    "chat.postMessage": frozenset({"chat:write"}),
    "chat.postEphemeral": frozenset({"chat:write"}),
    "chat.update": frozenset({"chat:write"}),
    "chat.delete": frozenset({"chat:write"}),
    "reactions.add": frozenset({"reactions:write"}),
    "reactions.remove": frozenset({"reactions:write"}),
    # Slack accepts chat:write for it in channel threads (assistant:write is for AI apps).
    "assistant.threads.setStatus": frozenset({"chat:write"}),
    "conversations.open": frozenset({"im:write"}),
    "conversations.history": _HISTORY,
    "conversations.replies": _HISTORY,
    # adapters.slack.directory: membership, user groups and display names, cached.
    "conversations.members": frozenset({"channels:read", "groups:read", "im:read", "mpim:read"}),
    "usergroups.users.list": frozenset({"usergroups:read"}),
    "users.info": frozenset({"users:read"}),
}
"""Every Web API method this package calls with a bot token, and the bot scopes it needs in
every kind of conversation."""

BOT_EVENT_SCOPES: Mapping[str, frozenset[str]] = {
    "message.channels": frozenset({"channels:history"}),
    "message.groups": frozenset({"groups:history"}),
    "message.im": frozenset({"im:history"}),
    "message.mpim": frozenset({"mpim:history"}),
    "app_mention": frozenset({"app_mentions:read"}),
    "reaction_added": frozenset({"reactions:read"}),
    "reaction_removed": frozenset({"reactions:read"}),
    "member_joined_channel": frozenset({"channels:read", "groups:read"}),
    "member_left_channel": frozenset({"channels:read", "groups:read"}),
}
"""The bot events the apps subscribe to (`adapters.slack.live.BOT_EVENTS`, with `message` per
conversation type) and the scopes Slack requires for each."""

REQUIRED_SCOPES: frozenset[str] = frozenset().union(
    *METHOD_SCOPES.values(), *BOT_EVENT_SCOPES.values()
)
METADATA_EVENT_TYPE = "c2a_message"

Lookup = Callable[[str], Awaitable[ChatEvent | None]]
"""The host's view of an event by id (`Engine.event`): who wrote the message being answered."""
Sleep = Callable[[float], Awaitable[None]]

# Calls that are not idempotent: if the answer is lost, the message may exist.
_UNSAFE = frozenset({"chat.postMessage", "chat.postEphemeral"})
_SERVER_ERRORS = frozenset({"internal_error", "fatal_error", "service_unavailable"})
_HINTS = {
    "not_in_channel": "; invite the bot into the channel (/invite @bot)",
    "channel_not_found": "; the channel does not exist or the bot cannot see it",
    "invalid_auth": "; the bot token is wrong or revoked",
    "not_authed": "; no bot token was sent",
    "is_archived": "; the channel is archived",
}
_FIELDS: Mapping[str, tuple[str, ...]] = {
    "send": ("agent", "conversation", "text", "idempotencyKey"),
    "react": ("conversation", "messageId", "idempotencyKey"),
    "status": ("conversation",),
    "edit": ("agent", "conversation", "messageId", "text"),
    "delete": ("agent", "conversation", "messageId"),
}
_PAGES = 10  # a bounded look for an earlier attempt: up to 2,000 messages


class _RateLimited(TransientSendError):
    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message, {"retryAfter": retry_after})
        self.retry_after = retry_after


class ChannelPacer:
    """About one message a second per channel, as Slack asks of `chat.postMessage`.

    `wait(channel)` returns when the channel's next message may go; messages to one channel
    are spaced `interval` apart, and no single wait is longer than that while no one else
    waits on the channel. `monotonic` and `sleep` are injectable for tests.
    """

    def __init__(
        self,
        interval: float = 1.0,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.interval = interval
        self._monotonic = monotonic
        self._sleep = sleep
        self._due: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def wait(self, channel: str) -> None:
        lock = self._locks.setdefault(channel, asyncio.Lock())
        async with lock:
            now = self._monotonic()
            due = self._due.get(channel, now)
            if due > now:
                await self._sleep(due - now)
            self._due[channel] = max(self._monotonic(), due) + self.interval
        if len(self._due) > 1000:  # forget channels that went quiet
            now = self._monotonic()
            for quiet in [c for c, d in self._due.items() if d < now]:
                del self._due[quiet]
                if not self._locks[quiet].locked():
                    del self._locks[quiet]


class SlackSender:
    """`core.outbox.Sender` for one workspace's Slack agents.

    Actions (built by the chat tools and the engine): `send` (chat.postMessage, or
    chat.postEphemeral for visibility `ephemeral`, or a DM for visibility `dm`), `react`
    (reactions.add with the workspace's glyph for the signal, then removal of the status
    reactions it supersedes), `status` (assistant.threads.setStatus; `""` clears it), `edit`
    (chat.update) and `delete` (chat.delete). `lookup` (the host's `Engine.event`) tells who
    wrote the message being answered, for ephemeral messages and DMs and for thread placement.
    Raises ManifestError when a bot token variable the manifest names is not set.
    """

    def __init__(
        self,
        workspace: Workspace,
        environ: Mapping[str, str] | None = None,
        *,
        lookup: Lookup | None = None,
        glyphs: GlyphMap | None = None,
        clock: Clock,
        pacer: ChannelPacer | None = None,
        sleep: Sleep = asyncio.sleep,
        timeout: int = 30,
        max_retry_after: float = 5.0,
        rate_limit_attempts: int = 3,
        lookback: timedelta = timedelta(days=1),
    ) -> None:
        self.workspace = workspace
        self.glyphs = glyphs or workspace.glyphs
        self.pacer = pacer or ChannelPacer(sleep=sleep)
        self._lookup = lookup
        self._clock = clock
        self._sleep = sleep
        self._max_retry_after = max_retry_after
        self._attempts = rate_limit_attempts
        self._lookback = lookback
        self._clients = _clients(workspace, environ, timeout)
        self._handlers: Mapping[str, Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]] = {
            "send": self._send_message,
            "react": self._react,
            "status": self._status,
            "edit": self._edit,
            "delete": self._delete,
        }
        # What this process knows: when a key was first tried, which parts of a split message
        # already landed, and which signal reactions each agent has placed on a message.
        self._first_try: dict[str, float] = {}
        self._landed: dict[str, dict[int, str]] = {}
        self._placed: dict[tuple[str, str, str], set[Signal]] = {}

    # ---- the Sender protocol ------------------------------------------------------------------

    @property
    def clients(self) -> Mapping[str, AsyncWebClient]:
        """Each agent's Web API client (its bot token), for read-only lookups elsewhere."""
        return dict(self._clients)

    async def send(self, action: Mapping[str, Any]) -> dict[str, Any]:
        """Perform one action; raises TransientSendError, PermanentSendError, or anything else
        (SendOutcomeUnknown, a timeout) when it may have landed."""
        kind = str(action.get("action"))
        handler = self._handlers.get(kind)
        if handler is None:
            raise PermanentSendError(f"slack: no such action {kind!r}")
        missing = [field for field in _FIELDS[kind] if not action.get(field)]
        if kind == "react" and not (action.get("signal") or action.get("emoji")):
            missing.append("signal")
        if missing:
            # Malformed for good: retrying or looking for it would never end.
            raise PermanentSendError(f"slack: {kind} action lacks {', '.join(missing)}")
        if action.get("signal") and action["signal"] not in set(Signal):
            raise PermanentSendError(f"slack: no such signal {action['signal']!r}")
        return await handler(action)

    async def find(self, action: Mapping[str, Any]) -> dict[str, Any] | None:
        """An earlier attempt of a `send` action, from the channel's or thread's history around
        the time it was tried; None when it did not land (or is an ephemeral message, which
        Slack keeps nowhere). Parts of a split message found here are not posted again."""
        if action.get("action") != "send" or action.get("visibility") == "ephemeral":
            return None
        agent, key = str(action["agent"]), str(action["idempotencyKey"])
        replied = await self._replied(action)
        where = await self._placement(agent, action, replied)
        params: dict[str, Any] = {"channel": where.channel, "limit": 200}
        params.update(oldest=f"{self._oldest(key, action, replied):.6f}")
        params["include_all_metadata"] = True
        method = "conversations.history"
        if where.thread_ts:
            method, params["ts"] = "conversations.replies", where.thread_ts
        found: dict[int, str] = {}
        parts = 0
        for _ in range(_PAGES):
            page = await self._call(agent, method, params, read=True)
            for message in page.get("messages") or []:
                payload = self._ours(agent, key, message)
                if payload is not None:
                    found[int(payload.get("part", 0))] = str(message["ts"])
                    parts = int(payload.get("parts", 1))
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                break
            params["cursor"] = cursor
        if not found:
            return None
        if len(found) < parts:
            self._landed.setdefault(key, {}).update(found)
            return None
        return _posted(where, [found[i] for i in sorted(found)])

    # ---- actions ------------------------------------------------------------------------------

    async def _send_message(self, action: Mapping[str, Any]) -> dict[str, Any]:
        agent, key = str(action["agent"]), str(action["idempotencyKey"])
        try:
            texts = render_message(
                str(action["text"]), action.get("mentions") or [], self.workspace
            )
        except RenderError as exc:
            raise PermanentSendError(f"slack {agent}: {exc}") from None
        replied = await self._replied(action)
        if action.get("visibility") == "ephemeral":
            return await self._ephemeral(agent, action, replied, texts)
        where = await self._placement(agent, action, replied)
        self._first_try.setdefault(key, self._clock.now().timestamp())
        landed = self._landed.setdefault(key, {})
        try:
            for part, text in enumerate(texts):
                if part not in landed:
                    landed[part] = await self._post(agent, key, where, text, part, len(texts))
        except PermanentSendError:
            self._forget(key)
            raise
        self._forget(key)
        return _posted(where, [landed[i] for i in sorted(landed)])

    async def _post(
        self, agent: str, key: str, where: Placement, text: str, part: int, parts: int
    ) -> str:
        payload = {"idempotency_key": key, "part": part, "parts": parts}
        params: dict[str, Any] = {"channel": where.channel, "text": text, "link_names": False}
        params["metadata"] = {"event_type": METADATA_EVENT_TYPE, "event_payload": payload}
        if where.thread_ts:
            params["thread_ts"] = where.thread_ts
            params["reply_broadcast"] = where.broadcast
        await self.pacer.wait(where.channel)
        return str((await self._call(agent, "chat.postMessage", params))["ts"])

    def _forget(self, key: str) -> None:
        self._landed.pop(key, None)
        self._first_try.pop(key, None)

    async def _ephemeral(
        self, agent: str, action: Mapping[str, Any], replied: ChatEvent | None, texts: list[str]
    ) -> dict[str, Any]:
        user = _audience(action, replied)
        if user is None:
            raise PermanentSendError(
                f"slack {agent}: an ephemeral message needs the person it is for, and the "
                "message it answers is unknown"
            )
        where = place(action, replied, reply_in_thread=self._reply_in_thread(action))
        ids = []
        for text in texts:
            params: dict[str, Any] = {"channel": where.channel, "user": user, "text": text}
            if where.thread_ts:
                params["thread_ts"] = where.thread_ts
            await self.pacer.wait(where.channel)
            ids.append(str((await self._call(agent, "chat.postEphemeral", params))["message_ts"]))
        return {"messageId": ids[0], "messageIds": ids, "conversation": where.channel, "user": user}

    async def _react(self, action: Mapping[str, Any]) -> dict[str, Any]:
        agent = _agent_of(action)
        channel = str(action["conversation"]).partition("/")[0]
        ts = str(action["messageId"])
        signal = Signal(action["signal"]) if action.get("signal") else None
        if signal is not None:
            name = self.glyphs.native("slack", signal)
        else:
            name = normalise_emoji(str(action["emoji"]))
        params = {"channel": channel, "timestamp": ts}
        await self._call(agent, "reactions.add", {**params, "name": name}, ok={"already_reacted"})
        removed: list[str] = []
        if signal is not None:
            placed = self._placed.setdefault((agent, channel, ts), set())
            # Known placements when this process made them; otherwise every candidate.
            stale = superseded_by(signal) & placed if placed else superseded_by(signal)
            for old in sorted(stale):
                glyph = self.glyphs.native("slack", old)
                ok = {"no_reaction"}
                await self._call(agent, "reactions.remove", {**params, "name": glyph}, ok=ok)
                removed.append(glyph)
            placed.difference_update(stale)
            placed.add(signal)
        return {"messageId": ts, "reaction": name, "removed": removed}

    async def _status(self, action: Mapping[str, Any]) -> dict[str, Any]:
        agent = _agent_of(action)
        where = place(
            {**action, "visibility": "thread"}, await self._replied(action), reply_in_thread=True
        )
        if where.thread_ts is None:
            raise PermanentSendError(f"slack {agent}: a status is shown in a thread; none given")
        status = str(action.get("status") or "")
        params = {"channel_id": where.channel, "thread_ts": where.thread_ts, "status": status}
        await self._call(agent, "assistant.threads.setStatus", params)
        return {"status": status, "conversation": where.channel, "thread": where.thread_ts}

    async def _edit(self, action: Mapping[str, Any]) -> dict[str, Any]:
        agent = str(action["agent"])
        channel = str(action["conversation"]).partition("/")[0]
        try:
            texts = render_message(
                str(action["text"]), action.get("mentions") or [], self.workspace
            )
        except RenderError as exc:
            raise PermanentSendError(f"slack {agent}: {exc}") from None
        if len(texts) > 1:
            raise PermanentSendError(f"slack {agent}: an edit must fit in one message")
        params = {"channel": channel, "ts": str(action["messageId"]), "text": texts[0]}
        await self._call(agent, "chat.update", params)
        return {"messageId": params["ts"], "conversation": channel}

    async def _delete(self, action: Mapping[str, Any]) -> dict[str, Any]:
        agent = str(action["agent"])
        channel = str(action["conversation"]).partition("/")[0]
        params = {"channel": channel, "ts": str(action["messageId"])}
        await self._call(agent, "chat.delete", params, ok={"message_not_found"})
        return {"messageId": params["ts"], "conversation": channel, "deleted": True}

    # ---- placement ----------------------------------------------------------------------------

    async def _replied(self, action: Mapping[str, Any]) -> ChatEvent | None:
        event_id = action.get("inReplyTo") or action.get("eventId")
        if self._lookup is None or not event_id:
            return None
        return await self._lookup(str(event_id))

    def _reply_in_thread(self, action: Mapping[str, Any]) -> bool:
        channel = self.workspace.channel(str(action["conversation"]).partition("/")[0])
        return channel.reply_in_thread

    async def _placement(
        self, agent: str, action: Mapping[str, Any], replied: ChatEvent | None
    ) -> Placement:
        where = place(action, replied, reply_in_thread=self._reply_in_thread(action))
        if action.get("visibility") != "dm" or where.channel.startswith("D"):
            return where
        user = _audience(action, replied)
        if user is None:
            raise PermanentSendError(
                f"slack {agent}: a DM needs the person it is for: name one user: recipient"
            )
        opened = await self._call(agent, "conversations.open", {"users": user})
        return Placement(str(opened["channel"]["id"]))

    def _oldest(self, key: str, action: Mapping[str, Any], replied: ChatEvent | None) -> float:
        """Where to start looking: a little before the first try this process made, else the
        message being answered, else `lookback` ago."""
        if key in self._first_try:
            return self._first_try[key] - 300.0  # clocks differ; Slack's ts is Slack's time
        ref = message_ref(action.get("inReplyTo"))
        replied_ts = replied.message_id if replied else (ref[1] if ref else None)
        if replied_ts:
            return float(replied_ts)
        return (self._clock.now() - self._lookback).timestamp()

    def _ours(self, agent: str, key: str, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """The metadata payload of a message this agent posted under `key`, or None."""
        config = SlackAgent.of(self.workspace.manifest.agents[agent])
        mine = config is not None and (
            message.get("user") == config.user_id
            or (config.bot_id is not None and message.get("bot_id") == config.bot_id)
        )
        metadata = message.get("metadata") or {}
        payload = metadata.get("event_payload") or {}
        tagged = metadata.get("event_type") == METADATA_EVENT_TYPE
        return dict(payload) if mine and tagged and payload.get("idempotency_key") == key else None

    # ---- the Web API --------------------------------------------------------------------------

    async def _call(
        self,
        agent: str,
        method: str,
        params: Mapping[str, Any],
        *,
        read: bool = False,
        ok: frozenset[str] | set[str] = frozenset(),
    ) -> dict[str, Any]:
        """One Web API call, a short 429 retried (bounded); Slack errors in `ok` are answers."""
        client = self._clients.get(agent)
        if client is None:
            raise PermanentSendError(f"slack: agent {agent!r} has no Slack bot token configured")

        async def once() -> dict[str, Any]:
            try:
                if read:
                    response = await client.api_call(method, http_verb="GET", params=dict(params))
                else:
                    response = await client.api_call(method, json=dict(params))
            except SlackApiError as exc:
                if api_error(exc) in ok:
                    return {"ok": False, "error": api_error(exc)}
                raise _mapped(agent, method, params, exc) from None
            except (TimeoutError, aiohttp.ClientError) as exc:
                raise _mapped(agent, method, params, exc) from exc
            return dict(response.data) if isinstance(response.data, dict) else {}

        def short(exc: BaseException) -> bool:
            return isinstance(exc, _RateLimited) and exc.retry_after <= self._max_retry_after

        retrying = AsyncRetrying(
            retry=retry_if_exception(short),
            wait=_retry_after,
            stop=stop_after_attempt(self._attempts),
            sleep=self._sleep,
            reraise=True,
        )
        return await retrying(once)


def _retry_after(state: RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome else None
    return exc.retry_after if isinstance(exc, _RateLimited) else 1.0


def api_error(exc: SlackApiError) -> str:
    """The `error` a Slack Web API call answered (`ratelimited`, `channel_not_found`, ...), or
    its HTTP status when the body names none."""
    data = exc.response.data
    error = data.get("error") if isinstance(data, dict) else None
    return str(error or f"HTTP {exc.response.status_code}")


def _mapped(agent: str, method: str, params: Mapping[str, Any], exc: Exception) -> Exception:
    """A foreign failure as this project's: transient, permanent, or an unknown outcome."""
    channel = params.get("channel") or params.get("channel_id")
    where = f"slack {agent}: {method}" + (f" in {channel}" if channel else "")
    if isinstance(exc, SlackApiError):
        status, error = exc.response.status_code, api_error(exc)
        if status == 429 or error == "ratelimited":
            headers = exc.response.headers or {}
            raw = headers.get("Retry-After") or headers.get("retry-after") or "1"
            retry_after = float(raw) if str(raw).replace(".", "", 1).isdigit() else 1.0
            return _RateLimited(f"{where}: rate limited for {retry_after:g} s", retry_after)
        if status >= 500 or error in _SERVER_ERRORS:
            if method in _UNSAFE:
                return SendOutcomeUnknown(f"{where}: Slack failed ({error}); it may have posted")
            return TransientSendError(f"{where}: Slack failed ({error})", {"error": error})
        if error == "missing_scope":
            data = exc.response.data if isinstance(exc.response.data, dict) else {}
            needed = data.get("needed") or ", ".join(sorted(METHOD_SCOPES.get(method, ())))
            return PermanentSendError(
                f"{where}: the Slack app lacks the scope {needed}; add it and reinstall the app",
                {"error": error, "needed": needed},
            )
        return PermanentSendError(
            f"{where}: refused: {error}{_HINTS.get(error, '')}", {"error": error}
        )
    what = type(exc).__name__
    if isinstance(exc, aiohttp.ClientConnectorError):  # the request never left
        return TransientSendError(f"{where}: cannot reach Slack ({what})")
    if method in _UNSAFE:
        return SendOutcomeUnknown(f"{where}: no answer ({what}); it may have posted")
    return TransientSendError(f"{where}: no answer ({what})")


def _posted(where: Placement, ids: list[str]) -> dict[str, Any]:
    return {
        "messageId": ids[0],
        "messageIds": ids,
        "conversation": where.channel,
        "thread": where.thread_ts,
    }


def _agent_of(action: Mapping[str, Any]) -> str:
    """The acting agent; the engine's own reactions name it only in their key
    (`<eventId>:<agent>:react:<signal>`)."""
    if action.get("agent"):
        return str(action["agent"])
    key, event_id = str(action.get("idempotencyKey", "")), str(action.get("eventId", ""))
    agent = key.removeprefix(f"{event_id}:").partition(":react:")[0]
    if not event_id or not key.startswith(f"{event_id}:") or not agent:
        raise PermanentSendError(f"slack: action {key!r} names no agent")
    return agent


def _audience(action: Mapping[str, Any], replied: ChatEvent | None) -> str | None:
    """Who a DM or ephemeral message is for: the author of the message answered, else the one
    `user:` recipient."""
    if replied is not None:
        return replied.author.id
    users = [m.partition(":")[2] for m in action.get("mentions") or [] if m.startswith("user:")]
    return users[0] if len(users) == 1 else None


def _clients(
    workspace: Workspace, environ: Mapping[str, str] | None, timeout: int
) -> dict[str, AsyncWebClient]:
    env = os.environ if environ is None else environ
    base_url = api_base(workspace)
    clients = {}
    for agent, config in workspace.manifest.agents.items():
        app = SlackAgent.of(config)
        if app is None or not app.bot_token_env:
            continue
        token = env.get(app.bot_token_env)
        if not token:
            raise ManifestError(
                f"agents.{agent}.slack.bot_token_env names {app.bot_token_env}, which is not set",
                {"agent": agent, "variable": app.bot_token_env},
            )
        # No retry handlers: slack-sdk's connection-error retry would resend a posted message.
        clients[agent] = AsyncWebClient(
            token=token, base_url=base_url, timeout=timeout, retry_handlers=[]
        )
    return clients


def scope_problem(agent: str, granted: str | None) -> str | None:
    """One line naming the scopes an agent's app lacks, from `auth.test`'s `x-oauth-scopes`
    header (comma-separated); None when nothing is missing or Slack did not say."""
    if granted is None:
        return None
    missing = REQUIRED_SCOPES - {s.strip() for s in granted.split(",")}
    if not missing:
        return None
    return (
        f"agents.{agent}: the Slack app lacks the scopes {', '.join(sorted(missing))}; "
        "add them (manifests/slack/app-manifest.yaml has them all) and reinstall the app"
    )


async def verify(
    workspace: Workspace, environ: Mapping[str, str] | None = None, *, timeout: int = 10
) -> dict[str, dict[str, Any]]:
    """Check every agent's bot token with `auth.test`: it must be accepted, belong to the
    manifest's `slack.user_id` (and `bot_id`, `team_id` when given), and carry every scope the
    code uses. Returns what Slack said per agent; raises ManifestError with one line per
    problem (a missing variable, a refused token, the wrong bot, missing scopes, no Slack)."""
    env = os.environ if environ is None else environ
    manifest = workspace.manifest
    team = SlackWorkspace.of(manifest)
    base_url = api_base(workspace)
    problems: list[str] = []
    found: dict[str, dict[str, Any]] = {}
    for agent, config in manifest.agents.items():
        slack = SlackAgent.of(config)
        if slack is None or not slack.bot_token_env:
            continue
        variable = slack.bot_token_env
        token = env.get(variable)
        if not token:
            problems.append(
                f"agents.{agent}.slack.bot_token_env names {variable}, which is not set"
            )
            continue
        client = AsyncWebClient(token=token, base_url=base_url, timeout=timeout, retry_handlers=[])
        try:
            response = await client.auth_test()
        except SlackApiError as exc:
            problems.append(
                f"agents.{agent}: Slack refused the token in {variable} ({api_error(exc)})"
            )
            continue
        except (TimeoutError, aiohttp.ClientError) as exc:
            problems.append(
                f"agents.{agent}: cannot reach Slack at {base_url} ({type(exc).__name__})"
            )
            continue
        data = dict(response.data) if isinstance(response.data, dict) else {}
        checks = [
            ("user_id", slack.user_id, data.get("user_id")),
            ("bot_id", slack.bot_id, data.get("bot_id")),
            ("team_id", team.team_id if team else None, data.get("team_id")),
        ]
        wrong = [
            f"agents.{agent}: the token in {variable} is for {key} {got}, the manifest says {want}"
            for key, want, got in checks
            if want is not None and got != want
        ]
        scopes = scope_problem(agent, (response.headers or {}).get("x-oauth-scopes"))
        problems.extend(wrong + ([scopes] if scopes else []))
        found[agent] = data
    if problems:
        raise ManifestError("\n".join(problems), {"problems": len(problems)})
    return found
