"""Catching up from Slack's history after an outage longer than Slack's own retries.

Slack sends an event nobody acknowledged again, with backoff, for about an hour; what was said
during a longer outage is never sent. So on a start after an earlier run (the ledger holds a
message one of this workspace's bots received), before the connections open, each bot reads
what it missed: for every channel the manifest configures (Slack ids only), every conversation
(DMs among them, which no endpoint lists) whose newest ledger message this bot received, and
every thread the ledger holds that was still active when the host stopped (its newest message
at most the window before the ledger's newest), plus the threads of messages read now; it asks
`conversations.history` (`conversations.replies` for a thread) for the messages after the
newest one the ledger holds there, or, where it holds none, after the last time the host
received anything.

The window (`slack.catch_up` in the manifest: `minutes`, `messages`) bounds it per
conversation and thread: only messages at most `minutes` old, and of those the newest
`messages`. What the gap holds beyond that is not answered out of the blue: one line per
conversation logs the range of missed messages (ts and times, never text). The rest goes to
the intake in `ts` order (oldest first, across conversations and bots), each as the
`event_callback` body Slack would have sent that bot, so deduplication, attention and claims
treat it exactly like a live message, and a later Slack retry of the same message is a repeat.

Slack's answers are untrusted: an item that is not a message object with a well-formed `ts` is
left out, and a conversation Slack will not let a bot read (`not_in_channel`, a missing scope,
an outage) is logged in one line and skipped. A 429 is retried after its `Retry-After` when that
is short, as the sender does; reads are safe to repeat.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters import Receive
from adapters.slack.envelope import PLATFORM
from adapters.slack.history import (
    READ_ERRORS,
    TS,
    History,
    Place,
    RateLimited,
    Sleep,
    time_of,
    ts_key,
    ts_of,
)
from adapters.slack.manifest import SlackAgent, SlackCatchUp, SlackWorkspace
from adapters.slack.webapi import api_error
from core.clock import parse_time
from core.codec import LEDGER_KINDS
from core.events import EventKind
from core.manifest import Workspace
from core.store import ConversationMark, Store

__all__ = ["EVENT_PREFIX", "SKEW", "catch_up"]

log = logging.getLogger(__name__)

EVENT_PREFIX: Final = f"{PLATFORM}:"
SKEW: Final = timedelta(seconds=60)
"""Read this much before the host's last receipt, for the host's and Slack's clocks."""

_CHANNEL_ID: Final = re.compile(r"[CG][A-Z0-9]{2,30}")


@dataclass(frozen=True, slots=True)
class _Found:
    """A message a bot read, to hand over as that bot's event."""

    agent: str
    place: Place
    message: dict[str, Any]


async def catch_up(
    workspace: Workspace,
    clients: Mapping[str, AsyncWebClient],
    receive: Receive,
    store: Store,
    *,
    now: datetime,
    sleep: Sleep | None = None,
) -> int:
    """Read what each agent's bot (`clients`: agent → its bot token's client) missed, within
    the manifest's window before `now`, and hand it to `receive` in order; returns how many
    messages were handed over (a message counts once per bot that read it). Nothing is read on
    a first run, and nothing raises for anything Slack answers."""
    slack = SlackWorkspace.of(workspace.manifest)
    window = slack.catch_up if slack is not None else SlackCatchUp()
    if slack is None or window.minutes == 0 or window.messages == 0:
        return 0
    marks = await store.conversation_marks(
        EVENT_PREFIX, LEDGER_KINDS[EventKind.MESSAGE], threads=True
    )
    if not marks:
        return 0  # a first run: never answer old chat
    last_run = max(parse_time(mark.ts) for mark in marks)
    # A ledger marks every thread it ever saw; only those active when the host stopped count.
    active_since = last_run - timedelta(minutes=window.minutes)
    marks = [m for m in marks if not m.thread or parse_time(m.ts) >= active_since]
    receipts = {mark.event_id: set(await store.receipts(mark.event_id)) for mark in marks}
    reader = _Reader(window, now - timedelta(minutes=window.minutes), sleep)
    found: list[_Found] = []
    for agent, client in clients.items():
        if not any(agent in seen for seen in receipts.values()):
            continue  # this bot never ran here: a first run for it
        places = _places(workspace, agent, marks, receipts)
        since = ts_of(last_run - SKEW)
        found += await reader.read_all(agent, client, places, since)
    found.sort(key=lambda f: (ts_key(f.message["ts"]), f.place.channel))
    team = slack.team_id
    handed = 0
    for item in found:
        if await _hand_over(receive, workspace, team, item):
            handed += 1
    if found:
        log.info("slack: caught up %d message(s) from history", handed)
    return handed


def _places(
    workspace: Workspace,
    agent: str,
    marks: list[ConversationMark],
    receipts: Mapping[str, set[str]],
) -> list[Place]:
    """The configured channels, the ledger's conversations this bot had the newest message of,
    and its threads active when the host stopped."""
    places: dict[tuple[str, str | None], Place] = {}
    configured = [c for c in workspace.manifest.channels if _CHANNEL_ID.fullmatch(c)]
    for channel in configured:
        places[(channel, None)] = Place(channel, "channel", None, None)
    for mark in marks:  # threads already only those active when the host stopped
        channel, _, ts = mark.event_id.removeprefix(EVENT_PREFIX).split(":", 1)[-1].rpartition(":")
        if channel != mark.conversation or not TS.fullmatch(ts):
            continue
        if agent not in receipts[mark.event_id] and channel not in configured:
            continue  # another bot's DM or private channel
        thread = mark.thread or None
        if thread is not None and not TS.fullmatch(thread):
            continue
        places[(channel, thread)] = Place(channel, _channel_type(mark), thread, ts)
    return list(places.values())


def _channel_type(mark: ConversationMark) -> str:
    if mark.kind == "dm":
        return "im" if mark.conversation.startswith("D") else "mpim"
    return "channel"


class _Reader:
    """Reads the places of one bot after another, inside one window."""

    def __init__(self, window: SlackCatchUp, floor: datetime, sleep: Sleep | None) -> None:
        self.window = window
        self._slack = History(window, floor, sleep)

    async def read_all(
        self, agent: str, client: AsyncWebClient, places: list[Place], since: str
    ) -> list[_Found]:
        found: list[_Found] = []
        queue = list(places)
        seen = {(p.channel, p.thread) for p in places}
        while queue:
            place = queue.pop(0)
            try:
                messages = await self._read(agent, client, place, since)
            except READ_ERRORS as exc:
                log.warning(
                    "slack agent %s: cannot read the history of %s (%s); what was said there "
                    "while the host was down is not caught up",
                    agent,
                    _where(place),
                    _reason(exc),
                )
                continue
            for message in messages:
                found.append(_Found(agent, place, message))
                root = _replied_root(message, place)
                if root is not None and (place.channel, root) not in seen:
                    seen.add((place.channel, root))
                    queue.append(Place(place.channel, place.channel_type, root, place.after))
        return found

    async def _read(
        self, agent: str, client: AsyncWebClient, place: Place, since: str
    ) -> list[dict[str, Any]]:
        """The messages of one place inside the window, oldest first; logs what the gap
        holds beyond it."""
        after = place.after or since
        if place.thread is None:
            kept, missed = await self._slack.history(client, place, after)
        else:
            kept, missed = await self._slack.replies(client, place, after)
        if missed is not None:
            log.warning(
                "slack agent %s: %s: the messages after %s up to %s (ts %s to %s) were sent "
                "while the host was down and are beyond the catch-up window (%d minutes, %d "
                "messages); they were not read",
                agent,
                _where(place),
                time_of(after),
                time_of(missed),
                after,
                missed,
                self.window.minutes,
                self.window.messages,
            )
        return kept


async def _hand_over(receive: Receive, workspace: Workspace, team: str, item: _Found) -> bool:
    """Give one message to the intake as the `event_callback` body Slack would have sent the
    bot; False (logged in one line) when that raised."""
    place, message = item.place, item.message
    event = {**message, "channel": place.channel, "channel_type": place.channel_type}
    event.setdefault("event_ts", message["ts"])
    slack = SlackAgent.of(workspace.manifest.agents[item.agent])
    body: dict[str, Any] = {
        "type": "event_callback",
        "team_id": team,
        "event": event,
        "event_time": int(ts_key(message["ts"])[0]),
    }
    if slack is not None:
        body["authorizations"] = [{"team_id": team, "user_id": slack.user_id, "is_bot": True}]
    try:
        await receive(PLATFORM, body, item.agent)
    except Exception as exc:
        log.error(
            "slack agent %s: caught-up message %s in %s was not received: %s",
            item.agent,
            message["ts"],
            _where(place),
            type(exc).__name__,
        )
        return False
    return True


def _replied_root(message: Mapping[str, Any], place: Place) -> str | None:
    """The ts of the thread a top-level message read now roots, when it has replies."""
    if place.thread is not None or not message.get("reply_count"):
        return None
    thread = message.get("thread_ts")
    return thread if thread == message["ts"] else None


def _reason(exc: Exception) -> str:
    if isinstance(exc, SlackApiError):
        return api_error(exc)
    return str(exc) if isinstance(exc, RateLimited) else type(exc).__name__


def _where(place: Place) -> str:
    where = f"conversation {place.channel}"
    return f"{where} thread {place.thread}" if place.thread is not None else where
