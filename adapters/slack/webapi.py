"""Slack's Web API as the outbound side calls it: one slack-sdk `AsyncWebClient` per agent (its
bot token), all of a sender's clients on one `aiohttp.ClientSession` (`HttpPool`: its
connections are kept and reused, not opened for every call), one way to call them with Slack's
failures mapped to this project's, and `verify`, the startup check of every agent's token.

Nothing here may post a message twice. slack-sdk's own retries are off (`retry_handlers=[]`),
because its connection-error retry would resend `chat.postMessage`. A call is tried once; only
a 429 is retried here, only when its `Retry-After` is short; a longer one, an outage, or a
network error before the request left becomes `TransientSendError` and the outbox tries again
later. When a post may have landed (a timeout or dropped connection after the request left,
a 5xx), the outcome is unknown: `SendOutcomeUnknown`. Slack's refusals (`invalid_auth`,
`channel_not_found`, `not_in_channel`, ...) are `PermanentSendError` with one line that says
what to do.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator, Mapping
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.live import api_base
from adapters.slack.manifest import SlackAgent, SlackWorkspace
from adapters.slack.pacing import Sleep
from adapters.slack.scopes import METHOD_SCOPES, scope_problem
from core.errors import ManifestError, PermanentSendError, SendOutcomeUnknown, TransientSendError
from core.manifest import Workspace

__all__ = ["HttpPool", "WebApi", "api_error", "verify"]

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


class _RateLimited(TransientSendError):
    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message, {"retryAfter": retry_after})
        self.retry_after = retry_after


class HttpPool:
    """One `aiohttp.ClientSession` for a sender's Web API clients, opened on first use (inside
    the running loop) with the clients' timeout, and closed once by `close`; after that the
    clients fall back to slack-sdk's session per call."""

    def __init__(self, timeout: int) -> None:
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    def session(self) -> aiohttp.ClientSession | None:
        if self._closed:
            return None
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout))
        return self._session

    async def close(self) -> None:
        self._closed = True
        if self._session is not None:
            await self._session.close()


class WebApi:
    """Each agent's Web API client and the one way to call it: a short 429 retried (bounded,
    on the injected `sleep`), anything else mapped to a send error. The clients share `pool`
    (their own when none is given). Raises ManifestError when a bot token variable the
    manifest names is not set."""

    def __init__(
        self,
        workspace: Workspace,
        environ: Mapping[str, str] | None = None,
        *,
        sleep: Sleep = asyncio.sleep,
        timeout: int = 30,
        max_retry_after: float = 5.0,
        rate_limit_attempts: int = 3,
        pool: HttpPool | None = None,
    ) -> None:
        self.clients: Mapping[str, AsyncWebClient] = _clients(workspace, environ, timeout)
        self.pool = pool or HttpPool(timeout)
        self._sleep = sleep
        self._max_retry_after = max_retry_after
        self._attempts = rate_limit_attempts

    async def call(
        self,
        agent: str,
        method: str,
        params: Mapping[str, Any],
        *,
        read: bool = False,
        ok: frozenset[str] | set[str] = frozenset(),
    ) -> dict[str, Any]:
        """One Web API call as `agent`; Slack errors in `ok` are answers, not failures. Tried
        once; a 429 whose `Retry-After` is short is waited out and tried again, up to the
        attempts given, and anything else raises at once."""
        client = self.clients.get(agent)
        if client is None:
            raise PermanentSendError(f"slack: agent {agent!r} has no Slack bot token configured")
        client.session = self.pool.session()
        try:
            return await _once(client, agent, method, params, read, ok)
        except _RateLimited as exc:
            limited = exc
        for _ in range(self._attempts - 1):
            if limited.retry_after > self._max_retry_after:
                break
            await self._sleep(limited.retry_after)
            try:
                return await _once(client, agent, method, params, read, ok)
            except _RateLimited as exc:
                limited = exc
        raise limited


async def _once(
    client: AsyncWebClient,
    agent: str,
    method: str,
    params: Mapping[str, Any],
    read: bool,
    ok: frozenset[str] | set[str],
) -> dict[str, Any]:
    """One try of a call, its failure mapped (`_mapped`)."""
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


def _bot_tokens(
    workspace: Workspace, environ: Mapping[str, str] | None
) -> Iterator[tuple[str, SlackAgent, str, str | None]]:
    """Each agent with a Slack bot token variable: its config, the variable, and the token
    (None when the variable is not set)."""
    env = os.environ if environ is None else environ
    for agent, config in workspace.manifest.agents.items():
        app = SlackAgent.of(config)
        if app is not None and app.bot_token_env:
            variable = app.bot_token_env
            yield agent, app, variable, env.get(variable) or None


def _unset(agent: str, variable: str) -> str:
    return f"agents.{agent}.slack.bot_token_env names {variable}, which is not set"


def _client(token: str, base_url: str, timeout: int) -> AsyncWebClient:
    # No retry handlers: slack-sdk's connection-error retry would resend a posted message.
    return AsyncWebClient(token=token, base_url=base_url, timeout=timeout, retry_handlers=[])


def _clients(
    workspace: Workspace, environ: Mapping[str, str] | None, timeout: int
) -> dict[str, AsyncWebClient]:
    base_url = api_base(workspace)
    clients = {}
    for agent, _, variable, token in _bot_tokens(workspace, environ):
        if token is None:
            raise ManifestError(_unset(agent, variable), {"agent": agent, "variable": variable})
        clients[agent] = _client(token, base_url, timeout)
    return clients


async def verify(
    workspace: Workspace, environ: Mapping[str, str] | None = None, *, timeout: int = 10
) -> dict[str, dict[str, Any]]:
    """Check every agent's bot token with `auth.test`: it must be accepted, belong to the
    manifest's `slack.user_id` (and `bot_id`, `team_id` when given), and carry every scope the
    code uses. Returns what Slack said per agent; raises ManifestError with one line per
    problem (a missing variable, a refused token, the wrong bot, missing scopes, no Slack)."""
    team = SlackWorkspace.of(workspace.manifest)
    base_url = api_base(workspace)
    problems: list[str] = []
    found: dict[str, dict[str, Any]] = {}
    for agent, slack, variable, token in _bot_tokens(workspace, environ):
        if token is None:
            problems.append(_unset(agent, variable))
            continue
        try:
            response = await _client(token, base_url, timeout).auth_test()
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
