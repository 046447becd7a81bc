"""The values every Discord parser reads out of a dispatch: where it happened, who did it, whom
a message names and answers, which emoji; and the event they make. Pure."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from adapters.discord.fields import Fields
from core.events import Author, AuthorKind, ChatEvent, Conversation, ConversationKind, EventKind

__all__ = [
    "DM_WORKSPACE",
    "PLATFORM",
    "Place",
    "emoji",
    "member_author",
    "message_author",
    "to_event",
    "to_place",
]

PLATFORM: Final = "discord"

DM_WORKSPACE: Final = "@me"
"""Discord's own name for the "guild" of direct messages (as in `/channels/@me`)."""

Place = tuple[str, Conversation]
"""The workspace (guild id, or `DM_WORKSPACE`) and the conversation of a dispatch."""


def to_place(f: Fields) -> Place:
    """Where anything with `channel_id` and, in guilds, `guild_id` happened.

    A DM has no `guild_id`. A guild `channel_id` may be a thread's: the payload does not say,
    and the core learns it from `THREAD_CREATE`.
    """
    channel_id = f.text("channel_id")
    guild_id = f.opt_text("guild_id")
    if guild_id is None:
        return DM_WORKSPACE, Conversation(id=channel_id, kind=ConversationKind.DM)
    return guild_id, Conversation(id=channel_id, kind=ConversationKind.CHANNEL)


def to_event(
    place: Place,
    event_id: str,
    kind: EventKind,
    author: Author,
    created_at: datetime,
    **fields: Any,
) -> ChatEvent:
    """The Discord `ChatEvent` that happened at `place`; `fields` are the kind's own."""
    workspace_id, conversation = place
    return ChatEvent(
        event_id=event_id,
        kind=kind,
        platform=PLATFORM,
        workspace_id=workspace_id,
        conversation=conversation,
        author=author,
        created_at=created_at,
        **fields,
    )


def message_author(message: Fields, user: Fields) -> Author:
    """A message's author; webhooks (including crossposts) and Discord's system user are bots."""
    is_bot = user.flag("bot") or user.flag("system") or message.opt_text("webhook_id") is not None
    return Author(
        id=user.text("id"),
        kind=AuthorKind.BOT if is_bot else AuthorKind.HUMAN,
        display_name=_display_name(user, message.opt_obj("member")),
    )


def member_author(f: Fields, user_id: str) -> Author:
    """`user_id`, described by the optional `member` (with its `user`) of reactions and typing."""
    member = f.opt_obj("member")
    user = member.opt_obj("user") if member is not None else None
    is_bot = user is not None and user.flag("bot")
    return Author(
        id=user_id,
        kind=AuthorKind.BOT if is_bot else AuthorKind.HUMAN,
        display_name=_display_name(user, member),
    )


def emoji(f: Fields) -> str:
    """A unicode emoji as sent (variation selectors kept), a custom one as `name:id`."""
    emoji_id = f.opt_text("id")
    if emoji_id is None:
        return f.text("name")
    # The name of a custom emoji deleted from its guild is null; the id still names it.
    return f"{f.opt_text('name') or ''}:{emoji_id}"


def _display_name(user: Fields | None, member: Fields | None) -> str | None:
    """The name people see: server nickname, else global display name, else username."""
    for source, key in ((member, "nick"), (user, "global_name"), (user, "username")):
        name = source.opt_text(key) if source is not None else None
        if name:
            return name
    return None
