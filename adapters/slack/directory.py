"""Who is who on Slack, asked of Slack and cached: the humans in a user group, the members of a
conversation (and so which agents are in it), and people's display names.

The host consults `SlackDirectory` around the normalisers, never from inside them: normalisers
stay pure, and a lookup here may wait on the network. Every answer is cached for `ttl` (ten
minutes by default, read from an injectable `Clock`); concurrent lookups of one key share one
request. Membership is kept current between fetches by `member_joined_channel` and
`member_left_channel` (`note_joined`, `note_left`), which cost no call.

When Slack cannot be asked (network, `ratelimited`, an outage, a refused token), the last answer
is used however old it is, the failure is logged in one line, and the key is not asked again
until Slack's `Retry-After` has passed (else `error_backoff` after an outage or a network
error, `ttl` after a refusal such as a missing scope). With nothing known yet, the
answer is empty (`None` for a name): the directory never guesses. A missing scope is reported
once per app and scope, as a line that says what to add. Slack user groups cannot contain bots,
so which agents a group means stays manifest configuration (`roles.<name>.slack_usergroups`);
`usergroup_members` tells only which humans are in one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from adapters.slack.scopes import METHOD_SCOPES
from adapters.slack.webapi import api_error
from core.clock import Clock
from core.manifest import Workspace

__all__ = ["DEFAULT_TTL", "SlackDirectory"]

log = logging.getLogger(__name__)

DEFAULT_TTL = timedelta(minutes=10)

T = TypeVar("T")

# Refusals about what this token can see, not about the thing asked for: another agent's
# token may do better (a private channel only some agents are in, one app lacking a scope).
_TOKEN_BOUND = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "missing_scope",
        "invalid_auth",
        "not_authed",
        "token_revoked",
        "token_expired",
        "account_inactive",
    }
)

_TRANSIENT = frozenset({"ratelimited", "internal_error", "fatal_error", "service_unavailable"})


class _Failed(Exception):
    """A lookup Slack did not answer; carries one line for the log and when to ask again."""

    def __init__(self, agent: str, reason: str, retry_after: timedelta, *, reported: bool) -> None:
        super().__init__(reason)
        self.agent = agent
        self.reason = reason
        self.retry_after = retry_after
        self.reported = reported  # already said once, in its own line (a missing scope)


@dataclass(slots=True)
class _Entry(Generic[T]):
    value: T
    fetched: datetime


@dataclass(slots=True)
class _Table(Generic[T]):
    """One Web API method's answers by key, its fetches in flight, and its back-offs."""

    method: str
    absent: T  # the answer when Slack says the thing does not exist
    absent_errors: frozenset[str]
    entries: dict[str, _Entry[T]] = field(default_factory=dict)
    inflight: dict[str, asyncio.Task[T | None]] = field(default_factory=dict)
    amends: dict[str, list[Callable[[T], T]]] = field(default_factory=dict)
    retry_at: dict[str, datetime] = field(default_factory=dict)

    def amend(self, key: str, change: Callable[[T], T]) -> None:
        """Apply `change` to what is known of `key`, and to the answer of a fetch in flight
        (which may have been read before the change happened)."""
        entry = self.entries.get(key)
        if entry is not None:
            entry.value = change(entry.value)
        if key in self.inflight:
            self.amends.setdefault(key, []).append(change)


class SlackDirectory:
    """Cached Slack lookups for one workspace.

    `clients` is one `AsyncWebClient`, or a mapping agent → client (each agent's bot token
    reads as well as any other). With a mapping, clients are tried in its order while Slack's
    refusal is about the token (`channel_not_found` in a private channel the agent is not in,
    `missing_scope`, a revoked token); any other failure ends the lookup. The directory never
    closes the clients it is given. No method raises for anything Slack does.
    """

    def __init__(
        self,
        workspace: Workspace,
        clients: AsyncWebClient | Mapping[str, AsyncWebClient],
        *,
        clock: Clock,
        ttl: timedelta = DEFAULT_TTL,
        error_backoff: timedelta = timedelta(seconds=30),
        page_size: int = 200,
        max_pages: int = 50,
    ) -> None:
        if isinstance(clients, AsyncWebClient):
            # One client of no named agent: its lines name no app.
            self._clients: list[tuple[str, AsyncWebClient]] = [("", clients)]
        else:
            self._clients = list(clients.items())
        if not self._clients:
            raise ValueError("SlackDirectory needs at least one AsyncWebClient")
        self.workspace = workspace
        self.ttl = ttl
        self.error_backoff = error_backoff
        self._clock = clock
        self._page_size = page_size
        self._max_pages = max_pages
        self._reported: set[tuple[str, str]] = set()
        self._groups: _Table[frozenset[str]] = _Table(
            "usergroups.users.list", frozenset(), frozenset({"no_such_subteam"})
        )
        self._members: _Table[frozenset[str]] = _Table(
            "conversations.members", frozenset(), frozenset({"channel_not_found"})
        )
        self._names: _Table[str | None] = _Table(
            "users.info", None, frozenset({"user_not_found", "users_not_found"})
        )

    # ---- lookups ------------------------------------------------------------------------------

    async def usergroup_members(self, usergroup: str) -> frozenset[str]:
        """The user ids of the humans in a user group (`S…`); empty when the group does not
        exist or nothing is known and Slack cannot be asked."""

        async def fetch(client: AsyncWebClient) -> frozenset[str]:
            response = await client.usergroups_users_list(usergroup=usergroup)
            return frozenset(str(user) for user in _data(response).get("users") or [])

        found = await self._lookup(self._groups, usergroup, fetch)
        return found if found is not None else frozenset()

    async def members(self, channel: str) -> frozenset[str]:
        """The user ids of a conversation's members, bots included; empty when no agent can
        see the conversation or nothing is known and Slack cannot be asked."""

        async def fetch(client: AsyncWebClient) -> frozenset[str]:
            found: set[str] = set()
            cursor: str | None = None
            for _ in range(self._max_pages):
                response = await client.conversations_members(
                    channel=channel, limit=self._page_size, cursor=cursor
                )
                data = _data(response)
                found.update(str(user) for user in data.get("members") or [])
                cursor = (data.get("response_metadata") or {}).get("next_cursor") or None
                if cursor is None:
                    return frozenset(found)
            log.warning(
                "slack directory: %s %s has more than %d pages; using the first %d members",
                self._members.method,
                channel,
                self._max_pages,
                len(found),
            )
            return frozenset(found)

        found = await self._lookup(self._members, channel, fetch)
        return found if found is not None else frozenset()

    async def agents_in(self, channel: str) -> set[str]:
        """The workspace's agents whose bot users are members of `channel` (manifest ids)."""
        agents = (self.workspace.agent_for("slack", user) for user in await self.members(channel))
        return {agent for agent in agents if agent is not None}

    async def display_name(self, user_id: str) -> str | None:
        """The name Slack shows for a user: the profile's display name, else the real name,
        else the user name; None when Slack does not know the user or cannot be asked."""

        async def fetch(client: AsyncWebClient) -> str | None:
            user = _data(await client.users_info(user=user_id)).get("user") or {}
            profile = user.get("profile") or {}
            for name in (
                profile.get("display_name"),
                profile.get("real_name"),
                user.get("real_name"),
                user.get("name"),
            ):
                if name:
                    return str(name)
            return None

        return await self._lookup(self._names, user_id, fetch)

    # ---- events -------------------------------------------------------------------------------

    def note_joined(self, channel: str, user: str) -> None:
        """A `member_joined_channel` event: `user` is now in `channel`. Changes what is known
        (and a fetch in flight); a channel never looked up stays unknown until it is."""
        self._members.amend(channel, lambda users: users | {user})

    def note_left(self, channel: str, user: str) -> None:
        """A `member_left_channel` event: `user` is no longer in `channel`."""
        self._members.amend(channel, lambda users: users - {user})

    # ---- the cache ----------------------------------------------------------------------------

    async def _lookup(
        self, table: _Table[T], key: str, fetch: Callable[[AsyncWebClient], Awaitable[T]]
    ) -> T | None:
        """The fresh answer, else one fetch shared by every caller; None when nothing is known."""
        now = self._clock.now()
        entry = table.entries.get(key)
        if entry is not None and now < entry.fetched + self.ttl:
            return entry.value
        retry_at = table.retry_at.get(key)
        if retry_at is not None and now < retry_at:
            return entry.value if entry is not None else None
        task = table.inflight.get(key)
        if task is None:
            refresh = self._refresh(table, key, fetch, now)
            task = table.inflight[key] = asyncio.create_task(refresh)
        # One caller giving up must not cancel the request the others wait on.
        return await asyncio.shield(task)

    async def _refresh(
        self,
        table: _Table[T],
        key: str,
        fetch: Callable[[AsyncWebClient], Awaitable[T]],
        started: datetime,
    ) -> T | None:
        try:
            value = await self._ask(table, key, fetch)
        except _Failed as failure:
            entry = table.entries.get(key)
            table.retry_at[key] = self._clock.now() + failure.retry_after
            if not failure.reported:
                age = (
                    f"using the answer from {_seconds(started - entry.fetched)} s ago"
                    if entry is not None
                    else "nothing known yet"
                )
                log.warning(
                    "slack directory: %s %s%s failed (%s); %s; asking again in %s s",
                    table.method,
                    key,
                    f" via {failure.agent}" if failure.agent else "",
                    failure.reason,
                    age,
                    _seconds(failure.retry_after),
                )
            return entry.value if entry is not None else None
        finally:
            table.inflight.pop(key, None)
            changes = table.amends.pop(key, [])
        for change in changes:
            value = change(value)
        table.retry_at.pop(key, None)
        table.entries[key] = _Entry(value, started)
        return value

    async def _ask(
        self, table: _Table[T], key: str, fetch: Callable[[AsyncWebClient], Awaitable[T]]
    ) -> T:
        """Slack's answer, from the first client whose token can give it; raises _Failed."""
        for number, (agent, client) in enumerate(self._clients, start=1):
            try:
                return await fetch(client)
            except SlackApiError as exc:
                error = api_error(exc)
                if error == "missing_scope":
                    self._report_scope(agent, table, exc)
                if error in _TOKEN_BOUND and number < len(self._clients):
                    continue
                if error in table.absent_errors:
                    return table.absent
                retry_after = self._backoff(exc)
                raise _Failed(
                    agent, error, retry_after, reported=error == "missing_scope"
                ) from None
            except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
                raise _Failed(
                    agent, type(exc).__name__, self.error_backoff, reported=False
                ) from exc
        raise AssertionError("unreachable: the last client answers or raises")

    def _backoff(self, exc: SlackApiError) -> timedelta:
        """How long to leave a key alone after Slack failed it: its `Retry-After` when rate
        limited, `error_backoff` after an outage, `ttl` after a refusal (which asking again
        soon would not change)."""
        headers = exc.response.headers or {}
        raw = str(headers.get("Retry-After") or headers.get("retry-after") or "")
        if raw.replace(".", "", 1).isdigit():
            return timedelta(seconds=float(raw))
        status, error = exc.response.status_code, api_error(exc)
        if status == 429 or status >= 500 or error in _TRANSIENT:
            return self.error_backoff
        return self.ttl

    def _report_scope(self, agent: str, table: _Table[Any], exc: SlackApiError) -> None:
        """Say once per app and scope what to add."""
        data = exc.response.data if isinstance(exc.response.data, dict) else {}
        needed = str(data.get("needed") or ", ".join(sorted(METHOD_SCOPES.get(table.method, ()))))
        if (agent, needed) in self._reported:
            return
        self._reported.add((agent, needed))
        log.error(
            "slack directory: the Slack app%s lacks the scope %s for %s; add it "
            "(manifests/slack/app-manifest.yaml has it) and reinstall the app",
            f" of {agent}" if agent else "",
            needed,
            table.method,
        )


def _data(response: AsyncSlackResponse) -> dict[str, Any]:
    return dict(response.data) if isinstance(response.data, dict) else {}


def _seconds(delta: timedelta) -> str:
    return f"{delta.total_seconds():g}"
