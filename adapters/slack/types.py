"""The raw Slack Events API payload shapes the normaliser reads, as `TypedDict`s.

Only the fields the normaliser looks at are declared; Slack sends many more and they are ignored.
Everything is `total=False` because Slack omits fields freely: the normaliser checks each field
it needs as it reads it and raises `PayloadError` when one is missing, of the wrong type, or past
the bounds of `adapters.limits` (a string too long, a timestamp outside years 1970-2999).
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = [
    "AppMentionEvent",
    "Authorization",
    "BotProfile",
    "ChangeFields",
    "Edited",
    "Event",
    "EventCallbackBody",
    "MemberChannelEvent",
    "MessageChangedEvent",
    "MessageDeletedEvent",
    "MessageEvent",
    "PostedFields",
    "ReactionEvent",
    "ReactionItem",
    "UserProfile",
]


class Authorization(TypedDict, total=False):
    """One installation the delivery was made for; `user_id` is the app's bot user."""

    enterprise_id: str | None
    team_id: str
    user_id: str
    is_bot: bool
    is_enterprise_install: bool


class Event(TypedDict, total=False):
    """The fields every inner event has; the rest depends on `type`."""

    type: str
    event_ts: str


class EventCallbackBody(TypedDict, total=False):
    """The outer `event_callback` body, as posted over HTTP or carried in a Socket Mode envelope.

    In an Enterprise Grid organisation it names the organisation (`enterprise_id`) and says
    whether the channel is shared with another organisation (`is_ext_shared_channel`);
    `context_*` name the workspace and organisation whose channel the event is in.
    """

    token: str
    team_id: str
    enterprise_id: str | None
    context_team_id: str | None
    context_enterprise_id: str | None
    is_ext_shared_channel: bool
    api_app_id: str
    event: Event
    type: str
    event_id: str
    event_time: int
    authorizations: list[Authorization]


class UserProfile(TypedDict, total=False):
    """The author's profile as embedded in a message (`user_profile`)."""

    display_name: str
    real_name: str
    name: str
    team: str


class BotProfile(TypedDict, total=False):
    """The app profile embedded in a message posted by an app (`bot_profile`)."""

    id: str
    app_id: str
    name: str
    team_id: str


class Edited(TypedDict, total=False):
    """Who last edited a message and when (`edited`)."""

    user: str
    ts: str


class PostedFields(Event, total=False):
    """What every posted message carries, in a `message` event and in the `app_mention` that
    copies it."""

    channel: str
    user: str
    bot_id: str
    text: str
    ts: str
    thread_ts: str
    team: str
    user_team: str
    source_team: str
    user_profile: UserProfile
    files: list[dict[str, Any]]


class MessageEvent(PostedFields, total=False):
    """A `message` event, its posting subtypes, and the `message`/`previous_message` it embeds.

    The `message` of a `message_changed` whose `subtype` is `tombstone` is a deleted message
    that had replies: Slack keeps it, hidden, as "This message was deleted.".
    """

    subtype: str
    hidden: bool
    channel_type: str
    username: str
    bot_profile: BotProfile
    edited: Edited


class AppMentionEvent(PostedFields, total=False):
    """An `app_mention`: a copy of the `message` event naming the app, without `channel_type`."""


class ChangeFields(Event, total=False):
    """What a `message` event reporting a change to another message carries."""

    subtype: str
    hidden: bool
    channel: str
    channel_type: str
    ts: str
    previous_message: MessageEvent


class MessageChangedEvent(ChangeFields, total=False):
    """A `message` of subtype `message_changed`: `message` is the message as it now is."""

    message: MessageEvent


class MessageDeletedEvent(ChangeFields, total=False):
    """A `message` of subtype `message_deleted`: `deleted_ts` names the message that went."""

    deleted_ts: str


class ReactionItem(TypedDict, total=False):
    """What a reaction is on; only `type == "message"` items are read."""

    type: str
    channel: str
    ts: str
    channel_type: str


class ReactionEvent(Event, total=False):
    """A `reaction_added` or `reaction_removed` event."""

    user: str
    reaction: str
    item_user: str
    item: ReactionItem


class MemberChannelEvent(Event, total=False):
    """A `member_joined_channel` or `member_left_channel` event (`channel_type` is `C` or `G`)."""

    user: str
    channel: str
    channel_type: str
    team: str
    inviter: str
    enterprise: str
