"""Parsing Discord's reaction dispatches (`MESSAGE_REACTION_ADD`, `_REMOVE`, `_REMOVE_ALL`,
`_REMOVE_EMOJI`), one function per wire event, pure."""

from __future__ import annotations

from adapters.discord import types
from adapters.discord.fields import Fields
from adapters.discord.values import emoji, member_author, to_event, to_place
from core.events import Author, ChatEvent, EventKind

__all__ = [
    "parse_message_reaction_add",
    "parse_message_reaction_remove",
    "parse_message_reaction_remove_all",
    "parse_message_reaction_remove_emoji",
]


def parse_message_reaction_add(d: types.MessageReactionAddEvent) -> ChatEvent:
    """A `MESSAGE_REACTION_ADD`: `user_id` put `emoji` on `message_id`."""
    return _to_reaction(Fields(d, "MESSAGE_REACTION_ADD"), EventKind.REACTION_ADDED, "+")


def parse_message_reaction_remove(d: types.MessageReactionRemoveEvent) -> ChatEvent:
    """A `MESSAGE_REACTION_REMOVE`: `user_id` took `emoji` off `message_id`."""
    return _to_reaction(Fields(d, "MESSAGE_REACTION_REMOVE"), EventKind.REACTION_REMOVED, "-")


def parse_message_reaction_remove_all(d: types.MessageReactionRemoveAllEvent) -> ChatEvent:
    """A `MESSAGE_REACTION_REMOVE_ALL`: a moderator cleared every reaction off `message_id`.

    A removal with no author and no emoji (`core.events.ChatEvent`)."""
    f = Fields(d, "MESSAGE_REACTION_REMOVE_ALL")
    return _to_cleared(f, None)


def parse_message_reaction_remove_emoji(d: types.MessageReactionRemoveEmojiEvent) -> ChatEvent:
    """A `MESSAGE_REACTION_REMOVE_EMOJI`: a moderator cleared one emoji, everyone's, off
    `message_id`. A removal with no author."""
    f = Fields(d, "MESSAGE_REACTION_REMOVE_EMOJI")
    return _to_cleared(f, emoji(f.obj("emoji")))


def _to_reaction(f: Fields, kind: EventKind, sign: str) -> ChatEvent:
    message_id = f.text("message_id")
    user_id = f.text("user_id")
    reaction = emoji(f.obj("emoji"))
    place = to_place(f)
    return to_event(
        place,
        f"discord:{message_id}{sign}{user_id}:{reaction}",
        kind,
        member_author(f, user_id),
        # A reaction carries no time of its own. The reacted message's time is only a fallback
        # that keeps `created_at` filled; the core orders reactions by when they were received.
        f.snowflake_time("message_id"),
        message_id=message_id,
        target_author_id=f.opt_text("message_author_id"),
        reaction=reaction,
    )


def _to_cleared(f: Fields, reaction: str | None) -> ChatEvent:
    message_id = f.text("message_id")
    place = to_place(f)
    # `*` stands for everyone; Discord gives the clearing no time, so, as for reactions, the
    # core tells a second clearing from a copy of the first.
    cleared = f"discord:{message_id}-*" + (f":{reaction}" if reaction is not None else "")
    created_at = f.snowflake_time("message_id")
    return to_event(
        place,
        cleared,
        EventKind.REACTION_REMOVED,
        Author(id=""),
        created_at,
        message_id=message_id,
        reaction=reaction,
    )
