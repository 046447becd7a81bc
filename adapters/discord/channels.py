"""Parsing Discord's dispatches about a channel rather than a message: a thread opened or
changed (`THREAD_CREATE`, `THREAD_UPDATE`) and someone typing (`TYPING_START`). Pure."""

from __future__ import annotations

from typing import Final

from adapters.discord.fields import Fields
from adapters.discord.types import ThreadCreateEvent, TypingStartEvent
from adapters.discord.values import DM_WORKSPACE, member_author, to_event, to_place
from core.events import Author, ChatEvent, Conversation, ConversationKind, EventKind

__all__ = ["parse_thread_create", "parse_thread_update", "parse_typing_start"]

# ANNOUNCEMENT_THREAD, PUBLIC_THREAD, PRIVATE_THREAD.
_THREAD_TYPES: Final = frozenset({10, 11, 12})


def parse_typing_start(d: TypingStartEvent) -> ChatEvent:
    """A `TYPING_START`: `user_id` began typing at `timestamp` (unix seconds)."""
    f = Fields(d, "TYPING_START")
    channel_id = f.text("channel_id")
    user_id = f.text("user_id")
    timestamp = f.integer("timestamp")
    created_at = f.unix_time("timestamp")
    place = to_place(f)
    event_id = f"discord:typing:{channel_id}:{user_id}@{timestamp}"
    return to_event(place, event_id, EventKind.TYPING, member_author(f, user_id), created_at)


def parse_thread_create(d: ThreadCreateEvent) -> ChatEvent | None:
    """A `THREAD_CREATE`: the thread, its parent channel, who started it and its name.

    Discord also sends this when the bot is added to an existing private thread; the id is the
    same either way, so the ledger keeps one. `None` if `d` is somehow not a thread.
    """
    f = Fields(d, "THREAD_CREATE")
    channel_type = f.opt_int("type")
    if channel_type is not None and channel_type not in _THREAD_TYPES:
        return None
    thread_id = f.text("id")
    workspace_id = f.opt_text("guild_id") or DM_WORKSPACE
    thread = Conversation(
        id=thread_id,
        kind=ConversationKind.THREAD,
        thread_id=thread_id,
        parent_id=f.text("parent_id"),
    )
    return to_event(
        (workspace_id, thread),
        f"discord:thread:{thread_id}",
        EventKind.THREAD_CREATED,
        Author(id=f.text("owner_id")),
        f.snowflake_time("id"),
        text=f.text("name"),
    )


def parse_thread_update(d: ThreadCreateEvent) -> ChatEvent | None:
    """A `THREAD_UPDATE` (renamed, archived, ...) carries the whole thread, so it registers a
    thread the host had not seen created (the bot joined later) under the same id as its
    `THREAD_CREATE`; for a thread the ledger already has, it is a repeat and changes nothing."""
    return parse_thread_create(d)
