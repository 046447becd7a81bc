"""The raw Discord gateway dispatch shapes the normaliser reads, as `TypedDict`s.

Only the fields the normaliser looks at are declared; Discord sends many more and they are
ignored. Keys Discord always sends are required, the rest sit in `total=False` classes. The
shapes describe what Discord promises, not what arrived: the normaliser still checks each field
as it reads it and raises `PayloadError` when one it needs is missing, of the wrong type, or past
the bounds of `adapters.limits`.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = [
    "Attachment",
    "ChannelMention",
    "Member",
    "MemberWithUser",
    "MentionedUser",
    "Message",
    "MessageCreateEvent",
    "MessageDeleteBulkEvent",
    "MessageDeleteEvent",
    "MessageReactionAddEvent",
    "MessageReactionRemoveAllEvent",
    "MessageReactionRemoveEmojiEvent",
    "MessageReactionRemoveEvent",
    "MessageReference",
    "MessageUpdateEvent",
    "PartialEmoji",
    "Snowflake",
    "ThreadCreateEvent",
    "TypingStartEvent",
    "User",
]

Snowflake = str
"""A Discord id: a 64-bit integer sent as a decimal string; the top 42 bits are a time in ms."""


class _UserRequired(TypedDict):
    id: Snowflake
    username: str


class User(_UserRequired, total=False):
    """A user as embedded in a payload; `global_name` is the display name, `bot` marks a bot."""

    global_name: str | None
    discriminator: str
    avatar: str | None
    bot: bool
    system: bool


class Member(TypedDict, total=False):
    """A guild member without its user (a message's `member`); `nick` is the server nickname."""

    nick: str | None
    roles: list[Snowflake]
    joined_at: str | None


class MemberWithUser(Member, total=False):
    """A guild member with its user, as in reactions and `TYPING_START`."""

    user: User


class MentionedUser(User, total=False):
    """An entry of a message's `mentions`: a user, with its member object in guilds."""

    member: Member


class Attachment(TypedDict, total=False):
    """A file on a message (`adapters.discord.files`)."""

    id: Snowflake
    filename: str
    size: int
    url: str
    content_type: str


class ChannelMention(TypedDict, total=False):
    """A channel named in a crossposted message (`mention_channels`); not read."""

    id: Snowflake
    guild_id: Snowflake
    type: int
    name: str


class _MessageReferenceRequired(TypedDict):
    channel_id: Snowflake


class MessageReference(_MessageReferenceRequired, total=False):
    """What a message points at: `type` 0 is a reply (the default), 1 a forward."""

    type: int
    message_id: Snowflake
    guild_id: Snowflake
    fail_if_not_exists: bool


class _MessageRequired(TypedDict):
    id: Snowflake
    channel_id: Snowflake
    author: User
    content: str
    timestamp: str
    edited_timestamp: str | None
    tts: bool
    mention_everyone: bool
    mentions: list[MentionedUser]
    mention_roles: list[Snowflake]
    attachments: list[Attachment]
    embeds: list[dict[str, Any]]
    type: int


class Message(_MessageRequired, total=False):
    """A message object; `content` is empty without the `message_content` intent."""

    pinned: bool
    flags: int
    nonce: int | str
    webhook_id: Snowflake
    application_id: Snowflake
    message_reference: MessageReference
    referenced_message: Message | None
    mention_channels: list[ChannelMention]


class MessageCreateEvent(Message, total=False):
    """`MESSAGE_CREATE`: a message plus `guild_id` and `member`, both absent in DMs."""

    guild_id: Snowflake
    member: Member


class MessageUpdateEvent(MessageCreateEvent, total=False):
    """`MESSAGE_UPDATE`: the whole message as it now is, with `MESSAGE_CREATE`'s extra fields
    (what Discord sends, an embed unfurl or a pin included; see the recorded payloads). The
    normaliser still reads each field as if it might be absent: Discord's documentation once
    allowed an update to carry only the fields that changed."""


class _MessageDeleteRequired(TypedDict):
    id: Snowflake
    channel_id: Snowflake


class MessageDeleteEvent(_MessageDeleteRequired, total=False):
    """`MESSAGE_DELETE`: only ids, whether or not anyone saw the message."""

    guild_id: Snowflake


class _MessageDeleteBulkRequired(TypedDict):
    ids: list[Snowflake]
    channel_id: Snowflake


class MessageDeleteBulkEvent(_MessageDeleteBulkRequired, total=False):
    """`MESSAGE_DELETE_BULK`: the ids of every message a moderator's purge removed."""

    guild_id: Snowflake


class PartialEmoji(TypedDict):
    """A reaction's emoji: `id` null and `name` the character(s) for unicode, both for custom."""

    id: Snowflake | None
    name: str | None


class _MessageReactionRequired(TypedDict):
    user_id: Snowflake
    channel_id: Snowflake
    message_id: Snowflake
    emoji: PartialEmoji


class MessageReactionRemoveEvent(_MessageReactionRequired, total=False):
    """`MESSAGE_REACTION_REMOVE`: who took which emoji off which message."""

    guild_id: Snowflake
    burst: bool
    type: int


class MessageReactionAddEvent(MessageReactionRemoveEvent, total=False):
    """`MESSAGE_REACTION_ADD`: as a removal, plus the reactor's member and the message's author."""

    member: MemberWithUser
    message_author_id: Snowflake


class _MessageReactionRemoveAllRequired(TypedDict):
    channel_id: Snowflake
    message_id: Snowflake


class MessageReactionRemoveAllEvent(_MessageReactionRemoveAllRequired, total=False):
    """`MESSAGE_REACTION_REMOVE_ALL`: every reaction was taken off a message (no user named)."""

    guild_id: Snowflake


class MessageReactionRemoveEmojiEvent(MessageReactionRemoveAllEvent):
    """`MESSAGE_REACTION_REMOVE_EMOJI`: one emoji, everyone's, was taken off a message."""

    emoji: PartialEmoji


class _TypingStartRequired(TypedDict):
    channel_id: Snowflake
    user_id: Snowflake
    timestamp: int


class TypingStartEvent(_TypingStartRequired, total=False):
    """`TYPING_START`: `timestamp` is unix seconds; `member` is present in guilds."""

    guild_id: Snowflake
    member: MemberWithUser


class _ThreadCreateRequired(TypedDict):
    id: Snowflake
    type: int
    parent_id: Snowflake
    owner_id: Snowflake
    name: str


class ThreadCreateEvent(_ThreadCreateRequired, total=False):
    """`THREAD_CREATE`: a thread channel (type 10, 11 or 12) inside the `parent_id` channel.

    Also sent when the bot is added to an existing private thread; `newly_created` is then absent.
    """

    guild_id: Snowflake
    newly_created: bool
    last_message_id: Snowflake | None
    message_count: int
    member_count: int
