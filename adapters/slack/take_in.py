"""Taking Slack events in before Slack is acknowledged: `TakeIn` hands each `event_callback` body
to `receive` (the host's), counting what it took in, and leaves an event it could not take in
unacknowledged for Slack to redeliver. It runs as a bolt middleware (HTTP Events API, and
anything bolt dispatches) and, for Socket Mode's `events_api` envelopes, ahead of bolt
(`EventsFirst`): there bolt's dispatch would only acknowledge what was taken in, at its whole
cost, for every copy of every event.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.socket_mode.internals import build_headers
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from adapters import Receive
from adapters.slack.normalise import PLATFORM
from core.postgres.outage import during_outage

__all__ = ["EventsFirst", "ReceiveStats", "TakeIn"]

log = logging.getLogger("adapters.slack.live")  # one logger for the live path's lines


@dataclass(slots=True)
class ReceiveStats:
    """What one connection has taken in: `received` event bodies handed to `receive`, of which
    `retries` were marked by Slack as redeliveries (by reason), and `failed` that `receive`
    refused (left unacknowledged for Slack to redeliver)."""

    received: int = 0
    retries: Counter[str] = field(default_factory=Counter)
    failed: int = 0


class TakeIn(AsyncMiddleware):
    """Hands each `event_callback` body to `receive`, then lets bolt go on to acknowledge it."""

    def __init__(self, agent: str, receive: Receive, stats: ReceiveStats) -> None:
        self._agent = agent
        self._receive = receive
        self._stats = stats
        self.in_flight: set[asyncio.Task[Any]] = set()
        self.closing = False

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],  # bolt passes it by this name
    ) -> BoltResponse | None:
        body = req.body
        if body.get("type") != "event_callback":
            return await next()  # url_verification, ssl_check: bolt answers those
        refused = await self.take(body, req.headers)
        return refused if refused is not None else await next()

    async def take(
        self, body: Mapping[str, Any], headers: Mapping[str, Sequence[str]]
    ) -> BoltResponse | None:
        """Hand one `event_callback` body to `receive`: None once it is taken in (acknowledge
        it), else the response that leaves it unacknowledged for Slack to redeliver."""
        if self.closing:  # neither taken in nor acknowledged: Slack sends it again later
            return BoltResponse(status=503, body="")
        event_id = body.get("event_id")
        retry = _first(headers, "x-slack-retry-num")
        if retry not in (None, "", "0"):
            reason = _first(headers, "x-slack-retry-reason") or "unknown"
            self._stats.retries[reason] += 1
            log.debug("slack %s: %s is redelivery %s (%s)", self._agent, event_id, retry, reason)
        task = asyncio.current_task()
        if task is not None:  # in flight until the acknowledgement is sent, from this task
            self.in_flight.add(task)
            task.add_done_callback(self.in_flight.discard)
        try:
            await self._receive(PLATFORM, body, self._agent)
        except Exception as exc:
            self._stats.failed += 1
            said = log.debug if during_outage(exc) else log.error  # the store said it once
            said(
                "slack %s: event %s not taken in (%s: %s); unacknowledged, Slack will redeliver",
                self._agent,
                event_id,
                type(exc).__name__,
                " ".join(str(exc).split()),  # one line, whatever the message holds
            )
            return BoltResponse(status=500, body="")
        self._stats.received += 1
        return None


class EventsFirst(AsyncSocketModeHandler):
    """Bolt's Socket Mode handler, with the events taken in before bolt: an `events_api`
    envelope holding an `event_callback` goes to the take-in and is acknowledged once it is
    taken in, without bolt's dispatch (authorize, middleware, listener matching), which would
    only acknowledge it: bolt's whole cost, paid for every copy of every event (one per agent,
    and the `app_mention` beside the `message`). Everything else (commands, interactivity,
    other envelopes) goes through bolt as before."""

    def __init__(self, app: AsyncApp, app_token: str | None, take_in: TakeIn) -> None:
        super().__init__(app, app_token)
        self._take_in = take_in

    async def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        body = req.payload
        if req.type != "events_api" or body.get("type") != "event_callback":
            await super().handle(client, req)
            return
        headers = {name: [str(value)] for name, value in (build_headers(req) or {}).items()}
        if await self._take_in.take(body, headers) is None:
            await client.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))


def _first(headers: Mapping[str, Sequence[str]], name: str) -> str | None:
    values = headers.get(name)
    return str(values[0]) if values else None
