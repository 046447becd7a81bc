"""Turning one Discord gateway dispatch into a core `ChatEvent`: pure, one parser per wire event.

Nothing here does I/O or reads a clock. `normalise` looks the dispatch name up in `PARSERS`;
names not in the table, and messages that are not messages (joins, pins, thread notices), give
`None`. Fields nobody reads are ignored, so new Discord fields never break anything; a field a
parser needs that is missing, of the wrong type, or past the bounds of `adapters.limits` (an
over-long string, an integer past 64 bits, a time outside years 1970-2999) raises `PayloadError`
naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final, TypeVar

from adapters.discord.types import (
    MessageCreateEvent,
    MessageDeleteBulkEvent,
    MessageDeleteEvent,
    MessageReactionAddEvent,
    MessageReactionRemoveAllEvent,
    MessageReactionRemoveEmojiEvent,
    MessageReactionRemoveEvent,
    MessageUpdateEvent,
    ThreadCreateEvent,
    TypingStartEvent,
)
from adapters.limits import MAX_NAME, MAX_TEXT, is_plausible, quoted, since_epoch, too_long
from core.errors import PayloadError
from core.events import (
    Author,
    AuthorKind,
    Broadcast,
    ChatEvent,
    Conversation,
    ConversationKind,
    EventKind,
    Mentions,
)

__all__ = [
    "MAX_BULK",
    "MESSAGE_TYPES",
    "PARSERS",
    "PLATFORM",
    "normalise",
    "parse_message_create",
    "parse_message_delete",
    "parse_message_delete_bulk",
    "parse_message_reaction_add",
    "parse_message_reaction_remove",
    "parse_message_reaction_remove_all",
    "parse_message_reaction_remove_emoji",
    "parse_message_update",
    "parse_thread_create",
    "parse_thread_update",
    "parse_typing_start",
    "snowflake_time",
]

PLATFORM: Final = "discord"

# Discord's own name for the "guild" of direct messages (as in `/channels/@me`).
_DM_WORKSPACE: Final = "@me"

MESSAGE_TYPES: Final = frozenset({0, 19, 20, 23})
"""Message `type`s that are someone saying something: DEFAULT, REPLY, CHAT_INPUT_COMMAND and
CONTEXT_MENU_COMMAND. Every other type is a system notice and is not a message."""

MAX_BULK: Final = 1_000
"""Ids in one `MESSAGE_DELETE_BULK`: Discord deletes at most 100 at once."""

# ANNOUNCEMENT_THREAD, PUBLIC_THREAD, PRIVATE_THREAD.
_THREAD_TYPES: Final = frozenset({10, 11, 12})

# `message_reference.type` 1 is a forward: it quotes another message without answering it.
_FORWARD: Final = 1

_DISCORD_EPOCH: Final = datetime(2015, 1, 1, tzinfo=UTC)
_SECOND: Final = timedelta(seconds=1)
# Discord's integers (types, flags, unix times) fit 64 bits; a larger one is absurd, and turning
# one of thousands of digits into text would raise.
_INT_BOUND: Final = 1 << 64
# A 64-bit unsigned integer has at most 20 decimal digits.
_SNOWFLAKE_DIGITS: Final = 20

_T = TypeVar("_T")

_KIND_NAMES: Final[Mapping[type, str]] = {
    str: "a string",
    int: "an integer",
    bool: "a boolean",
    list: "a list",
}


def snowflake_time(snowflake: str) -> datetime:
    """The UTC time encoded in a Discord snowflake (its top 42 bits, ms since 2015).

    Raises `ValueError` when `snowflake` is not a decimal 64-bit unsigned integer.
    """
    if (
        not (snowflake.isascii() and snowflake.isdecimal())
        or len(snowflake) > _SNOWFLAKE_DIGITS
        or int(snowflake) >= 1 << 64
    ):
        raise ValueError(f"not a snowflake: {snowflake!r}")
    return _DISCORD_EPOCH + timedelta(milliseconds=int(snowflake) >> 22)


@dataclass(frozen=True, slots=True)
class _Fields:
    """Checked reads from one object of an unverified payload; errors name the event and path.

    A key that is absent and a key that is `null` read the same: as missing. Strings are held to
    `MAX_NAME` characters (`MAX_TEXT` for a message's text), integers to 64 bits.
    """

    data: Mapping[str, object]
    event: str
    path: str = ""

    def text(self, key: str) -> str:
        return self._need(key, self.opt_text(key))

    def opt_text(self, key: str, limit: int = MAX_NAME) -> str | None:
        value = self._get(key, str)
        if value is not None and len(value) > limit:
            raise self.invalid(key, too_long(value, limit))
        return value

    def message_text(self, key: str) -> str | None:
        return self.opt_text(key, MAX_TEXT)

    def integer(self, key: str) -> int:
        return self._need(key, self.opt_int(key))

    def opt_int(self, key: str) -> int | None:
        value = self._get(key, int)
        if value is not None and not -_INT_BOUND < value < _INT_BOUND:
            raise self.invalid(key, "is out of range: an integer past 64 bits")
        return value

    def flag(self, key: str) -> bool:
        return self._get(key, bool) or False

    def count(self, key: str) -> int:
        return len(self._get(key, list) or ())

    def obj(self, key: str) -> _Fields:
        return self._need(key, self.opt_obj(key))

    def opt_obj(self, key: str) -> _Fields | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise self.wrong(key, "an object", value)
        return _Fields(value, self.event, f"{self.path}{key}.")

    def objs(self, key: str) -> tuple[_Fields, ...]:
        found: list[_Fields] = []
        for index, item in enumerate(self._get(key, list) or ()):
            where = f"{key}[{index}]"
            if not isinstance(item, Mapping):
                raise self.wrong(where, "an object", item)
            found.append(_Fields(item, self.event, f"{self.path}{where}."))
        return tuple(found)

    def texts(self, key: str) -> tuple[str, ...]:
        found: list[str] = []
        for index, item in enumerate(self._get(key, list) or ()):
            if not isinstance(item, str):
                raise self.wrong(f"{key}[{index}]", "a string", item)
            if len(item) > MAX_NAME:
                raise self.invalid(f"{key}[{index}]", too_long(item, MAX_NAME))
            found.append(item)
        return tuple(found)

    def snowflake_time(self, key: str) -> datetime:
        raw = self.text(key)
        try:
            return snowflake_time(raw)
        except ValueError:
            raise self.invalid(key, f"is not a snowflake: {quoted(raw)}") from None

    def iso_time(self, key: str) -> datetime:
        raw = self.text(key)
        try:
            when = datetime.fromisoformat(raw)
        except ValueError:
            raise self.invalid(key, f"is not an ISO 8601 time: {quoted(raw)}") from None
        if when.tzinfo is None:
            # Discord always sends an offset; a bare time can only have meant UTC.
            when = when.replace(tzinfo=UTC)
        if not is_plausible(when):  # checked first: `astimezone` overflows near the year 1 or 9999
            raise self.invalid(key, f"is not a time in years 1970-2999: {quoted(raw)}")
        return when.astimezone(UTC)

    def unix_time(self, key: str) -> datetime:
        seconds = self.integer(key)
        when = since_epoch(seconds, _SECOND)
        if when is None:
            raise self.invalid(key, f"is not a unix time in years 1970-2999: {seconds}")
        return when

    def wrong(self, key: str, expected: str, value: object) -> PayloadError:
        return self.invalid(key, f"should be {expected}, not {type(value).__name__}")

    def invalid(self, key: str, problem: str) -> PayloadError:
        where = f"{self.path}{key}"
        return PayloadError(
            f"{self.event} payload field '{where}' {problem}",
            details={"event": self.event, "field": where},
        )

    def _get(self, key: str, kind: type[_T]) -> _T | None:
        value = self.data.get(key)
        if value is None:
            return None
        # bool is an int to isinstance, never to Discord.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.wrong(key, _KIND_NAMES.get(kind, kind.__name__), value)
        return value

    def _need(self, key: str, value: _T | None) -> _T:
        if value is None:
            raise self.invalid(key, "is missing")
        return value


def _place(f: _Fields) -> tuple[str, Conversation]:
    """The workspace and conversation of anything with `channel_id` and, in guilds, `guild_id`.

    A DM has no `guild_id`. A guild `channel_id` may be a thread's: the payload does not say,
    and the core learns it from `THREAD_CREATE`.
    """
    channel_id = f.text("channel_id")
    guild_id = f.opt_text("guild_id")
    if guild_id is None:
        return _DM_WORKSPACE, Conversation(id=channel_id, kind=ConversationKind.DM)
    return guild_id, Conversation(id=channel_id, kind=ConversationKind.CHANNEL)


def _display_name(user: _Fields | None, member: _Fields | None) -> str | None:
    """The name people see: server nickname, else global display name, else username."""
    for source, key in ((member, "nick"), (user, "global_name"), (user, "username")):
        name = source.opt_text(key) if source is not None else None
        if name:
            return name
    return None


def _message_author(message: _Fields, user: _Fields) -> Author:
    """A message's author; webhooks (including crossposts) and Discord's system user are bots."""
    is_bot = user.flag("bot") or user.flag("system") or message.opt_text("webhook_id") is not None
    return Author(
        id=user.text("id"),
        kind=AuthorKind.BOT if is_bot else AuthorKind.HUMAN,
        display_name=_display_name(user, message.opt_obj("member")),
    )


def _member_author(f: _Fields, user_id: str) -> Author:
    """`user_id`, described by the optional `member` (with its `user`) of reactions and typing."""
    member = f.opt_obj("member")
    user = member.opt_obj("user") if member is not None else None
    is_bot = user is not None and user.flag("bot")
    return Author(
        id=user_id,
        kind=AuthorKind.BOT if is_bot else AuthorKind.HUMAN,
        display_name=_display_name(user, member),
    )


def _mentions(f: _Fields, content: str) -> Mentions:
    """Who a message names. A reply with its ping on lists the replied-to author in `mentions`."""
    broadcast: tuple[Broadcast, ...] = ()
    if f.flag("mention_everyone"):
        # One flag covers both; the text tells which. Both when both appear, and @everyone when
        # neither does (content withheld without the message_content intent).
        tokens = (("@everyone", Broadcast.EVERYONE), ("@here", Broadcast.HERE))
        broadcast = tuple(b for token, b in tokens if token in content) or (Broadcast.EVERYONE,)
    return Mentions(
        users=tuple(user.text("id") for user in f.objs("mentions")),
        roles=f.texts("mention_roles"),
        broadcast=broadcast,
    )


def _reply_to(f: _Fields) -> str | None:
    """The message this one answers: `message_reference`, unless the reference is a forward."""
    reference = f.opt_obj("message_reference")
    if reference is None or reference.opt_int("type") == _FORWARD:
        return None
    return reference.opt_text("message_id")


def _target_author_id(f: _Fields) -> str | None:
    """The author of the replied-to message; `referenced_message` is null once that is deleted."""
    referenced = f.opt_obj("referenced_message")
    return referenced.obj("author").text("id") if referenced is not None else None


def _emoji(emoji: _Fields) -> str:
    """A unicode emoji as sent (variation selectors kept), a custom one as `name:id`."""
    emoji_id = emoji.opt_text("id")
    if emoji_id is None:
        return emoji.text("name")
    # The name of a custom emoji deleted from its guild is null; the id still names it.
    return f"{emoji.opt_text('name') or ''}:{emoji_id}"


def parse_message_create(d: MessageCreateEvent) -> ChatEvent | None:
    """A `MESSAGE_CREATE`; `None` for a system notice (a `type` outside `MESSAGE_TYPES`)."""
    f = _Fields(d, "MESSAGE_CREATE")
    if f.integer("type") not in MESSAGE_TYPES:
        return None
    message_id = f.text("id")
    workspace_id, conversation = _place(f)
    content = f.message_text("content") or ""
    return ChatEvent(
        event_id=f"discord:{message_id}",
        kind=EventKind.MESSAGE,
        platform=PLATFORM,
        workspace_id=workspace_id,
        conversation=conversation,
        author=_message_author(f, f.obj("author")),
        created_at=f.iso_time("timestamp"),
        message_id=message_id,
        text=content,
        mentions=_mentions(f, content),
        reply_to=_reply_to(f),
        target_author_id=_target_author_id(f),
        files=f.count("attachments"),
    )


def parse_message_update(d: MessageUpdateEvent) -> ChatEvent | None:
    """A `MESSAGE_UPDATE` that edits text; `None` for other updates (embed unfurls, pins).

    Only an update with `content` and an `edited_timestamp` is an edit. Its id carries the edit
    time, so an update that repeats an edit already seen (a pin of an edited message) has the
    same id and the ledger drops it.
    """
    f = _Fields(d, "MESSAGE_UPDATE")
    content = f.message_text("content")
    edited_at = f.opt_text("edited_timestamp")
    if content is None or edited_at is None:
        return None
    message_type = f.opt_int("type")
    if message_type is not None and message_type not in MESSAGE_TYPES:
        return None
    message_id = f.text("id")
    workspace_id, conversation = _place(f)
    user = f.opt_obj("author")
    return ChatEvent(
        event_id=f"discord:{message_id}~{edited_at}",
        kind=EventKind.EDIT,
        platform=PLATFORM,
        workspace_id=workspace_id,
        conversation=conversation,
        author=_message_author(f, user) if user is not None else Author(id=""),
        created_at=f.iso_time("edited_timestamp"),
        message_id=message_id,
        text=content,
        mentions=_mentions(f, content),
        reply_to=_reply_to(f),
        target_author_id=_target_author_id(f),
        files=f.count("attachments"),
    )


def parse_message_delete(d: MessageDeleteEvent) -> ChatEvent:
    """A `MESSAGE_DELETE`: ids only, so no author and the message's own creation time."""
    f = _Fields(d, "MESSAGE_DELETE")
    return _to_delete(f, f.text("id"), f.snowflake_time("id"))


def parse_message_delete_bulk(d: MessageDeleteBulkEvent) -> ChatEvent | None:
    """A `MESSAGE_DELETE_BULK` (a moderator's purge): one carrier whose `batch` holds, for each
    id once, the very event a `MESSAGE_DELETE` of that message gives; `None` when `ids` is
    empty. More than `MAX_BULK` ids raise `PayloadError`."""
    f = _Fields(d, "MESSAGE_DELETE_BULK")
    ids = tuple(dict.fromkeys(f.texts("ids")))
    if len(ids) > MAX_BULK:
        raise f.invalid("ids", f"holds {len(ids):,} ids, at most {MAX_BULK:,}")
    deletes = tuple(_to_delete(f, message_id, _id_time(f, message_id)) for message_id in ids)
    if not deletes:
        return None
    first = deletes[0]
    return replace(first, event_id=f"discord:{ids[0]}..{ids[-1]}~deleted", batch=deletes)


def _to_delete(f: _Fields, message_id: str, created_at: datetime) -> ChatEvent:
    workspace_id, conversation = _place(f)
    return ChatEvent(
        event_id=f"discord:{message_id}~deleted",
        kind=EventKind.DELETE,
        platform=PLATFORM,
        workspace_id=workspace_id,
        conversation=conversation,
        author=Author(id=""),
        created_at=created_at,
        message_id=message_id,
    )


def _id_time(f: _Fields, message_id: str) -> datetime:
    """The time in one of the ids of a bulk delete."""
    try:
        return snowflake_time(message_id)
    except ValueError:
        raise f.invalid("ids", f"holds what is not a snowflake: {quoted(message_id)}") from None


def _parse_reaction(f: _Fields, kind: EventKind, sign: str) -> ChatEvent:
    message_id = f.text("message_id")
    user_id = f.text("user_id")
    emoji = _emoji(f.obj("emoji"))
    workspace_id, conversation = _place(f)
    return ChatEvent(
        event_id=f"discord:{message_id}{sign}{user_id}:{emoji}",
        kind=kind,
        platform=PLATFORM,
        workspace_id=workspace_id,
        conversation=conversation,
        author=_member_author(f, user_id),
        # A reaction carries no time of its own. The reacted message's time is only a fallback
        # that keeps `created_at` filled; the core orders reactions by when they were received.
        created_at=f.snowflake_time("message_id"),
        message_id=message_id,
        target_author_id=f.opt_text("message_author_id"),
        reaction=emoji,
    )


def parse_message_reaction_add(d: MessageReactionAddEvent) -> ChatEvent:
    """A `MESSAGE_REACTION_ADD`: `user_id` put `emoji` on `message_id`."""
    return _parse_reaction(_Fields(d, "MESSAGE_REACTION_ADD"), EventKind.REACTION_ADDED, "+")


def parse_message_reaction_remove(d: MessageReactionRemoveEvent) -> ChatEvent:
    """A `MESSAGE_REACTION_REMOVE`: `user_id` took `emoji` off `message_id`."""
    return _parse_reaction(_Fields(d, "MESSAGE_REACTION_REMOVE"), EventKind.REACTION_REMOVED, "-")


def parse_message_reaction_remove_all(d: MessageReactionRemoveAllEvent) -> ChatEvent:
    """A `MESSAGE_REACTION_REMOVE_ALL`: a moderator cleared every reaction off `message_id`.

    A removal with no author and no emoji (`core.events.ChatEvent`)."""
    f = _Fields(d, "MESSAGE_REACTION_REMOVE_ALL")
    return _to_cleared(f, None)


def parse_message_reaction_remove_emoji(d: MessageReactionRemoveEmojiEvent) -> ChatEvent:
    """A `MESSAGE_REACTION_REMOVE_EMOJI`: a moderator cleared one emoji, everyone's, off
    `message_id`. A removal with no author."""
    f = _Fields(d, "MESSAGE_REACTION_REMOVE_EMOJI")
    return _to_cleared(f, _emoji(f.obj("emoji")))


def _to_cleared(f: _Fields, emoji: str | None) -> ChatEvent:
    message_id = f.text("message_id")
    workspace_id, conversation = _place(f)
    return ChatEvent(
        # `*` stands for everyone; Discord gives the clearing no time, so, as for reactions,
        # the core tells a second clearing from a copy of the first.
        event_id=f"discord:{message_id}-*" + (f":{emoji}" if emoji is not None else ""),
        kind=EventKind.REACTION_REMOVED,
        platform=PLATFORM,
        workspace_id=workspace_id,
        conversation=conversation,
        author=Author(id=""),
        created_at=f.snowflake_time("message_id"),
        message_id=message_id,
        reaction=emoji,
    )


def parse_typing_start(d: TypingStartEvent) -> ChatEvent:
    """A `TYPING_START`: `user_id` began typing at `timestamp` (unix seconds)."""
    f = _Fields(d, "TYPING_START")
    channel_id = f.text("channel_id")
    user_id = f.text("user_id")
    timestamp = f.integer("timestamp")
    created_at = f.unix_time("timestamp")
    workspace_id, conversation = _place(f)
    return ChatEvent(
        event_id=f"discord:typing:{channel_id}:{user_id}@{timestamp}",
        kind=EventKind.TYPING,
        platform=PLATFORM,
        workspace_id=workspace_id,
        conversation=conversation,
        author=_member_author(f, user_id),
        created_at=created_at,
    )


def parse_thread_create(d: ThreadCreateEvent) -> ChatEvent | None:
    """A `THREAD_CREATE`: the thread, its parent channel, who started it and its name.

    Discord also sends this when the bot is added to an existing private thread; the id is the
    same either way, so the ledger keeps one. `None` if `d` is somehow not a thread.
    """
    f = _Fields(d, "THREAD_CREATE")
    channel_type = f.opt_int("type")
    if channel_type is not None and channel_type not in _THREAD_TYPES:
        return None
    thread_id = f.text("id")
    return ChatEvent(
        event_id=f"discord:thread:{thread_id}",
        kind=EventKind.THREAD_CREATED,
        platform=PLATFORM,
        workspace_id=f.opt_text("guild_id") or _DM_WORKSPACE,
        conversation=Conversation(
            id=thread_id,
            kind=ConversationKind.THREAD,
            thread_id=thread_id,
            parent_id=f.text("parent_id"),
        ),
        author=Author(id=f.text("owner_id")),
        created_at=f.snowflake_time("id"),
        text=f.text("name"),
    )


def parse_thread_update(d: ThreadCreateEvent) -> ChatEvent | None:
    """A `THREAD_UPDATE` (renamed, archived, ...) carries the whole thread, so it registers a
    thread the host had not seen created (the bot joined later) under the same id as its
    `THREAD_CREATE`; for a thread the ledger already has, it is a repeat and changes nothing."""
    return parse_thread_create(d)


# Each parser takes its own `TypedDict`; `Any` lets one table hold them all.
PARSERS: Final[Mapping[str, Callable[[Any], ChatEvent | None]]] = {
    "MESSAGE_CREATE": parse_message_create,
    "MESSAGE_UPDATE": parse_message_update,
    "MESSAGE_DELETE": parse_message_delete,
    "MESSAGE_DELETE_BULK": parse_message_delete_bulk,
    "MESSAGE_REACTION_ADD": parse_message_reaction_add,
    "MESSAGE_REACTION_REMOVE": parse_message_reaction_remove,
    "MESSAGE_REACTION_REMOVE_ALL": parse_message_reaction_remove_all,
    "MESSAGE_REACTION_REMOVE_EMOJI": parse_message_reaction_remove_emoji,
    "TYPING_START": parse_typing_start,
    "THREAD_CREATE": parse_thread_create,
    "THREAD_UPDATE": parse_thread_update,
}


CONTENT_MARK = "c2a_content"
"""Key the live adapter adds to a dispatch received without the Message Content intent."""


def normalise(dispatch: Mapping[str, Any]) -> ChatEvent | None:
    """The core event for one gateway dispatch (`{"op": 0, "t": NAME, "d": {...}}`), or `None`.

    `None` for payloads that are not dispatches, dispatch names not in `PARSERS` and updates
    that are not chat events. Raises `PayloadError` (details: `event`, `field`) when a handled
    dispatch lacks a field its parser needs or has one of the wrong type or past its bounds, and
    (details: `field` `""`) when `dispatch` is not an object at all. A dispatch the live
    adapter marked `"c2a_content": "withheld"` (its bot lacks the Message Content intent) gives
    a message with empty text the `content_withheld` flag.
    """
    if not isinstance(dispatch, Mapping):
        raise PayloadError(
            f"Discord dispatch should be an object, not {type(dispatch).__name__}",
            details={"field": ""},
        )
    if dispatch.get("op", 0) != 0:
        return None
    name = dispatch.get("t")
    parser = PARSERS.get(name) if isinstance(name, str) else None
    if parser is None:
        return None
    data = dispatch.get("d")
    if not isinstance(data, Mapping):
        raise PayloadError(
            f"{name} dispatch field 'd' is missing or not an object",
            details={"event": name, "field": "d"},
        )
    event = parser(data)
    if event is not None and not event.text and dispatch.get(CONTENT_MARK) == "withheld":
        return replace(event, content_withheld=True)
    return event
