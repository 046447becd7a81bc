"""Catching up from Discord's message history when a gateway session could not be resumed.

A bot whose kept session Discord refuses (INVALID_SESSION, or too long gone) IDENTIFYs afresh,
and Discord replays nothing. Then, once per new session, the connection reads what it missed
from history: for every text channel and thread of the guild the bot may read (discord.py's
cache, filled by the new session's GUILD_CREATE), and every conversation the ledger holds a
message of that reached this bot (DMs among them, which no endpoint lists), it fetches the
messages after the newest one the ledger holds there, or, where it holds none, after the time
the lost session last committed a dispatch.

The window (`discord.catch_up` in the manifest: `minutes`, `messages`) bounds it per
conversation: only messages at most `minutes` old, and of those the newest `messages`. What the
gap holds beyond that is not answered out of the blue: one line per conversation logs the range
of missed messages. The rest goes to the intake in snowflake order (oldest first, across
conversations), shaped as the MESSAGE_CREATE dispatch Discord would have sent (guild messages
get their `guild_id`), so deduplication, attention and claims treat each exactly like a live
message; a message the ledger already holds is a repeat and nothing more.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

import discord
from discord.utils import snowflake_time, time_snowflake

from adapters.discord.manifest import DiscordCatchUp
from adapters.discord.normalise import PLATFORM
from core.codec import LEDGER_KINDS
from core.events import EventKind
from core.store import Store

__all__ = ["EVENT_PREFIX", "SKEW", "Deliver", "catch_up"]

log = logging.getLogger(__name__)

EVENT_PREFIX: Final = f"{PLATFORM}:"
SKEW: Final = timedelta(seconds=60)
"""Read this much before a lost session's last commit, for the host's and Discord's clocks."""

_PAGE: Final = 100  # Discord's most messages per history request

Deliver = Callable[[dict[str, Any]], Awaitable[bool]]
"""Hands one MESSAGE_CREATE-shaped dispatch to the intake; False when it was not received."""


@dataclass(frozen=True, slots=True)
class _Place:
    """One conversation to read: its channel id, its guild (None for a DM), and the newest
    message id the ledger holds there (None when it holds none)."""

    channel: int
    guild: str | None
    after: int | None


async def catch_up(
    client: discord.Client,
    agent: str,
    deliver: Deliver,
    store: Store,
    *,
    guild_id: str | None,
    since: datetime,
    now: datetime,
    window: DiscordCatchUp,
) -> int:
    """Read what `agent`'s bot missed since `since` (at most the window before `now`) and hand
    it to `deliver` in order; returns how many messages were handed over."""
    if window.minutes == 0 or window.messages == 0:
        return 0
    floor = max(since - SKEW, now - timedelta(minutes=window.minutes))
    found: list[dict[str, Any]] = []
    for place in await _places(client, agent, store, guild_id):
        try:
            found += await _read(client, agent, place, since - SKEW, floor, window)
        except discord.HTTPException as exc:
            log.warning(
                "discord agent %s: cannot read the history of channel %s (%s %s); what was "
                "said there while the host was down is not caught up",
                agent,
                place.channel,
                exc.status,
                exc.text or type(exc).__name__,
            )
    found.sort(key=lambda message: int(message["id"]))
    handed = 0
    for message in found:
        handed += await deliver({"op": 0, "t": "MESSAGE_CREATE", "s": None, "d": message})
    if found:
        log.info("discord agent %s: caught up %d message(s) from history", agent, handed)
    return handed


async def _places(
    client: discord.Client, agent: str, store: Store, guild_id: str | None
) -> list[_Place]:
    """The conversations to read: the guild's readable text channels and threads, and the
    ledger's conversations with a message this bot received."""
    places: dict[int, _Place] = {}
    for guild in client.guilds:
        if guild_id is not None and str(guild.id) != guild_id:
            continue
        readable: list[discord.TextChannel | discord.Thread] = [*guild.text_channels]
        readable += guild.threads
        for channel in readable:
            if guild.me is None or channel.permissions_for(guild.me).read_message_history:
                places[channel.id] = _Place(channel.id, str(guild.id), None)
    for mark in await store.conversation_marks(EVENT_PREFIX, LEDGER_KINDS[EventKind.MESSAGE]):
        message_id = mark.event_id.removeprefix(EVENT_PREFIX)
        if not (mark.conversation.isdigit() and message_id.isdigit()):
            continue
        channel_id = int(mark.conversation)
        known = places.get(channel_id)
        if known is None and agent not in await store.receipts(mark.event_id):
            continue  # another bot's DM or private channel
        in_guild = known.guild if known is not None else None if mark.kind == "dm" else guild_id
        if mark.kind != "dm" and in_guild is None:
            continue
        places[channel_id] = _Place(channel_id, in_guild, int(message_id))
    return list(places.values())


async def _read(
    client: discord.Client,
    agent: str,
    place: _Place,
    since: datetime,
    floor: datetime,
    window: DiscordCatchUp,
) -> list[dict[str, Any]]:
    """The messages of one conversation inside the window, oldest first; logs what the gap
    holds beyond it."""
    after = place.after if place.after is not None else time_snowflake(since, high=True)
    lowest = max(after, time_snowflake(floor, high=True))
    kept: list[dict[str, Any]] = []
    before: int | None = None
    full = False
    while len(kept) < window.messages:
        want = min(_PAGE, window.messages - len(kept))
        page = await _history(client, place.channel, want, before=before)
        fresh = [m for m in page if int(m["id"]) > lowest]
        kept += fresh
        if len(fresh) < len(page) or len(page) < want:
            break
        before = int(page[-1]["id"])  # Discord answers newest first
    else:
        full = True
    kept.reverse()
    cut = int(kept[0]["id"]) if kept else lowest + 1
    if full or lowest > after:
        await _log_missed(client, agent, place.channel, after, cut, window)
    extra = {"guild_id": place.guild} if place.guild is not None else {}
    return [message | extra for message in kept]


async def _log_missed(
    client: discord.Client, agent: str, channel: int, after: int, cut: int, window: DiscordCatchUp
) -> None:
    """One line naming the range of the gap's messages (after `after`, before `cut`) left unread."""
    first = await _history(client, channel, 1, after=after)
    last = await _history(client, channel, 1, before=cut)
    if not first or not last or int(first[0]["id"]) >= cut or int(last[0]["id"]) <= after:
        return
    log.warning(
        "discord agent %s: channel %s: the messages from %s to %s (ids %s to %s) were sent while "
        "the host was down and are beyond the catch-up window (%d minutes, %d messages); they "
        "were not read",
        agent,
        channel,
        snowflake_time(int(first[0]["id"])).isoformat(timespec="seconds"),
        snowflake_time(int(last[0]["id"])).isoformat(timespec="seconds"),
        first[0]["id"],
        last[0]["id"],
        window.minutes,
        window.messages,
    )


async def _history(
    client: discord.Client,
    channel: int,
    limit: int,
    *,
    before: int | None = None,
    after: int | None = None,
) -> list[dict[str, Any]]:
    """One page of a channel's raw messages (`GET /channels/{id}/messages`), newest first;
    anything without a snowflake id is left out, so every id read later is a number."""
    page: object = await client.http.logs_from(channel, limit, before=before, after=after)
    if not isinstance(page, list):
        return []
    return [dict(m) for m in page if isinstance(m, dict) and _is_snowflake(m.get("id"))]


def _is_snowflake(value: object) -> bool:
    return isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 20
