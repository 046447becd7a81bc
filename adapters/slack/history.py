"""Reading one conversation's messages from Slack's history within a catch-up window:
`conversations.history` for a channel or DM, `conversations.replies` for a thread, page by
page, with a short 429 retried after its `Retry-After` (reads are safe to repeat).

Slack's answers are untrusted: an item that is not a message object with a well-formed `ts` is
left out. Nothing here logs or decides what to read; `adapters.slack.catchup` does both.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from adapters.slack.manifest import SlackCatchUp
from adapters.slack.webapi import api_error

__all__ = [
    "READ_ERRORS",
    "TS",
    "History",
    "Place",
    "RateLimited",
    "Sleep",
    "is_ts",
    "time_of",
    "ts_key",
    "ts_of",
]

_PAGE: Final = 200  # Slack's recommended page size for the conversations methods
_MAX_PAGES: Final = 50  # per conversation: at most 10,000 messages looked at
_RATE_ATTEMPTS: Final = 5
_MAX_RETRY_AFTER: Final = 30.0
TS: Final = re.compile(r"[0-9]{1,12}\.[0-9]{1,6}")
"""A well-formed Slack `ts`: whole seconds, a point, microseconds."""

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Place:
    """One conversation (or one thread of it, `thread` its root's ts) a bot reads, its Slack
    `channel_type`, and the ts of the newest message the ledger holds there (None: none)."""

    channel: str
    channel_type: str
    thread: str | None
    after: str | None


class RateLimited(Exception):
    """Slack asked for no more reads for `retry_after` seconds."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"rate limited for {retry_after:g} s")
        self.retry_after = retry_after


READ_ERRORS: Final = (SlackApiError, RateLimited, aiohttp.ClientError, TimeoutError)
"""What a read of a conversation Slack will not let a bot read, or cannot answer, raises."""


class History:
    """Reads inside one window: at most `window.messages` a place, none at or before `floor`."""

    def __init__(self, window: SlackCatchUp, floor: datetime, sleep: Sleep | None) -> None:
        self.window = window
        self.floor = ts_key(ts_of(floor))
        self._sleep = sleep

    async def history(
        self, client: AsyncWebClient, place: Place, after: str
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Newest first, until the window or the count ends it: the kept messages (oldest
        first), and the ts of the newest one left out (every one left out is after `after`
        and up to it)."""
        kept: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page, cursor = await self._page(client, "conversations.history", place, after, cursor)
            for message in page:
                if ts_key(message["ts"]) <= ts_key(after):
                    continue  # Slack was asked for none of these
                if ts_key(message["ts"]) <= self.floor or len(kept) >= self.window.messages:
                    kept.reverse()
                    return kept, message["ts"]
                kept.append(message)
            if cursor is None:
                break
        kept.reverse()
        return kept, None

    async def replies(
        self, client: AsyncWebClient, place: Place, after: str
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Oldest first, the whole gap of one thread (bounded): the newest `messages` inside
        the window, and the ts of the newest one left out."""
        read: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page, cursor = await self._page(client, "conversations.replies", place, after, cursor)
            read += [m for m in page if ts_key(m["ts"]) > ts_key(after) and m["ts"] != place.thread]
            if cursor is None:
                break
        inside = [m for m in read if ts_key(m["ts"]) > self.floor]
        kept = inside[-self.window.messages :] if inside else []
        left_out = read[: len(read) - len(kept)]
        return kept, left_out[-1]["ts"] if left_out else None

    async def _page(
        self,
        client: AsyncWebClient,
        method: str,
        place: Place,
        after: str,
        cursor: str | None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """One page: its well-formed messages, and the cursor of the next (None: the last)."""
        params: dict[str, Any] = {"channel": place.channel, "oldest": after, "limit": _PAGE}
        if place.thread is not None:
            params["ts"] = place.thread
        if cursor:
            params["cursor"] = cursor
        data = await self._call(client, method, params)
        raw = data.get("messages")
        page = [
            dict(m)
            for m in (raw if isinstance(raw, list) else [])
            if isinstance(m, dict) and m.get("type", "message") == "message" and is_ts(m.get("ts"))
        ]
        metadata = data.get("response_metadata")
        following = metadata.get("next_cursor") if isinstance(metadata, dict) else None
        if not isinstance(following, str) or not following or following == cursor:
            return page, None
        return page, following

    async def _call(
        self, client: AsyncWebClient, method: str, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        """One read, a short 429 retried after its `Retry-After` (bounded)."""

        async def once() -> dict[str, Any]:
            try:
                response = await client.api_call(method, http_verb="GET", params=dict(params))
            except SlackApiError as exc:
                headers = exc.response.headers or {}
                raw = str(headers.get("Retry-After") or headers.get("retry-after") or "")
                if exc.response.status_code == 429 or api_error(exc) == "ratelimited":
                    wait = float(raw) if raw.replace(".", "", 1).isdigit() else 1.0
                    raise RateLimited(wait) from None
                raise
            return dict(response.data) if isinstance(response.data, dict) else {}

        def short(exc: BaseException) -> bool:
            return isinstance(exc, RateLimited) and exc.retry_after <= _MAX_RETRY_AFTER

        retrying = AsyncRetrying(
            retry=retry_if_exception(short),
            wait=_retry_after,
            stop=stop_after_attempt(_RATE_ATTEMPTS),
            sleep=self._sleep or asyncio.sleep,
            reraise=True,
        )
        result: dict[str, Any] = await retrying(once)
        return result


def _retry_after(state: RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome else None
    return exc.retry_after if isinstance(exc, RateLimited) else 1.0


def is_ts(value: object) -> bool:
    """Whether `value` is a well-formed Slack `ts`."""
    return isinstance(value, str) and TS.fullmatch(value) is not None


def ts_key(ts: str) -> tuple[int, int]:
    """A Slack ts as a number that orders exactly (a float would not, past microseconds)."""
    seconds, _, fraction = ts.partition(".")
    return int(seconds), int(fraction.ljust(6, "0"))


def ts_of(moment: datetime) -> str:
    """The Slack `ts` of `moment` (none before the epoch)."""
    micros = max(round(moment.timestamp() * 1_000_000), 0)
    return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"


def time_of(ts: str) -> str:
    """A Slack `ts` as an ISO 8601 UTC time to the second, for a log line."""
    seconds, micros = ts_key(ts)
    moment = datetime.fromtimestamp(seconds, UTC) + timedelta(microseconds=micros)
    return moment.isoformat(timespec="seconds")
