"""The pure Slack Events API normaliser: one `event_callback` body in, one `ChatEvent` or None out.

No I/O, no network, no clock: everything comes from the body. Event types and message subtypes
the core has no use for come back as None and are never an error; a handled event that lacks a
field it needs, carries one of the wrong type, or one past the bounds of `adapters.limits` (an
over-long string, a timestamp outside years 1970-2999), raises `PayloadError` naming the field as
a dotted path (`event.ts`, `event.message.edited.ts`); the body itself is the field `""`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, cast

from adapters.limits import (
    EARLIEST,
    MAX_NAME,
    MAX_TEXT,
    epoch_limit,
    quoted,
    too_long,
)
from adapters.slack.types import (
    AppMentionEvent,
    EventCallbackBody,
    MemberChannelEvent,
    MessageChangedEvent,
    MessageDeletedEvent,
    MessageEvent,
    ReactionEvent,
)
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
    "EVENT_PARSERS",
    "MESSAGE_PARSERS",
    "PLATFORM",
    "Envelope",
    "extract_bot_user_id",
    "extract_mentions",
    "is_external",
    "is_inside_enterprise",
    "normalise",
    "parse_app_mention",
    "parse_member_joined_channel",
    "parse_member_left_channel",
    "parse_message",
    "parse_message_changed",
    "parse_message_deleted",
    "parse_posted_message",
    "parse_reaction_added",
    "parse_reaction_removed",
    "to_author",
    "to_conversation",
    "to_datetime",
    "to_envelope",
]

PLATFORM = "slack"

_SECOND = timedelta(seconds=1)
_MICROSECOND = timedelta(microseconds=1)
# Whole seconds in a Slack timestamp: twelve digits reach past the year 33000, so any more are
# absurd, and `int` is never asked to read thousands of them.
_SECONDS_DIGITS = 12
# A count of seconds or microseconds since the epoch is a time in `adapters.limits`' range
# when it is below these.
_LAST_SECOND = epoch_limit(_SECOND)
_LAST_MICROSECOND = epoch_limit(_MICROSECOND)
_NO_MENTIONS = Mentions()
# Reading an enum member off its class costs a lookup on every use; the hot path reads this.
_MESSAGE = EventKind.MESSAGE
_MENTION = re.compile(
    r"<(?:@(?P<user>[UW][A-Z0-9]+)"
    r"|!subteam\^(?P<role>[A-Z0-9]+)"
    r"|!(?P<broadcast>here|channel|everyone))"
    r"(?:\|[^>]*)?>"
)
# Fields an everyday plain message lacks: with any of them present (a hidden or a bot's message,
# an author profile, Slack Connect teams) it takes the general path, `parse_message`.
_NOT_IN_A_PLAIN_MESSAGE = frozenset(
    ("hidden", "bot_id", "user_profile", "bot_profile", "username", "user_team", "source_team")
)
# `channel_type` of message events; member events use one letter (`C`, `G`) and reactions may
# omit it, and those fall back to the channel id prefix.
_CHANNEL_TYPES: Mapping[str, tuple[ConversationKind, bool]] = {
    "im": (ConversationKind.DM, False),
    "mpim": (ConversationKind.DM, True),
    "channel": (ConversationKind.CHANNEL, False),
    "group": (ConversationKind.CHANNEL, False),
}


@dataclass(frozen=True, slots=True)
class Envelope:
    """What the outer body says about one delivery, shared by every parser."""

    team: str
    bot_user_id: str | None = None
    delivery_id: str | None = None
    event_time: int | None = None
    same_org: bool = False


# The raw event is typed `Any` here because each parser checks its fields as it reads them.
Parser = Callable[[Envelope, Any], ChatEvent | None]


def normalise(body: Mapping[str, Any]) -> ChatEvent | None:
    """Turn one whole `event_callback` body into a `ChatEvent`.

    Returns None for anything that is not an `event_callback` (`url_verification`,
    `app_rate_limited`), for event types and message subtypes that are not handled, for hidden
    messages, for `message_changed` that is no edit (unfurls), and for reactions on non-messages.
    Raises `PayloadError` when `body` is not an object, or a handled event lacks a field it
    needs or has one of a wrong type or past its bounds.

    Events are dispatched on `type` through `EVENT_PARSERS`, except that a plain `message` (no
    subtype), by far the most common event, goes straight to `_parse_plain_message`, which
    gives the same result as `parse_message` would.
    """
    if type(body) is not dict and not isinstance(body, Mapping):
        raise _wrong_type("", body, "object")
    if body.get("type") != "event_callback":
        return None
    event = body.get("event")
    if type(event) is dict and event.get("type") == "message" and event.get("subtype") is None:
        return _parse_plain_message(body, event)
    event = _mapping(body, "event", "event")
    parser = EVENT_PARSERS.get(_optional_str(event, "type", "event.type") or "")
    if parser is None:
        return None
    return parser(to_envelope(body), event)


def extract_mentions(text: str) -> Mentions:
    """Everyone Slack markup in `text` names, each once, in order of first appearance.

    `<@U123>`/`<@U123|name>` (and `W` ids) are users, `<!subteam^S123>` user groups (roles),
    `<!here>`, `<!channel>`, `<!everyone>` broadcasts; labels after `|` are ignored.
    """
    if "<" not in text:  # no markup at all, so no mentions: skip the regex
        return _NO_MENTIONS
    return _collect_mentions(tuple(_MENTION.findall(text)))


def to_envelope(body: EventCallbackBody | Mapping[str, Any]) -> Envelope:
    """The delivery facts of a body; the team is `team_id`, else the inner event's `team`."""
    team = _optional_str(body, "team_id", "team_id")
    if not team:
        event = _mapping(body, "event", "event")
        team = _optional_str(event, "team", "event.team")
    if not team:
        raise PayloadError("Slack payload is missing 'team_id'", details={"field": "team_id"})
    event_time = body.get("event_time")
    if isinstance(event_time, bool) or not isinstance(event_time, int | None):
        raise _wrong_type("event_time", event_time, "int")
    if event_time is not None and not 0 <= event_time < _LAST_SECOND:
        raise PayloadError(
            "Slack payload field 'event_time' is not a time in years 1970-2999",
            details={"field": "event_time"},
        )
    return Envelope(
        team=team,
        bot_user_id=extract_bot_user_id(body),
        delivery_id=_optional_str(body, "event_id", "event_id"),
        event_time=event_time,
        same_org=is_inside_enterprise(body),
    )


def is_inside_enterprise(body: EventCallbackBody | Mapping[str, Any]) -> bool:
    """Whether the delivery stays inside one Enterprise Grid organisation.

    True when the body names an `enterprise_id`, says the channel is not shared with another
    organisation (`is_ext_shared_channel` false, not merely absent), the installation
    (`authorizations.0.enterprise_id`, when the body has one) is of that organisation, and the
    channel's context (`context_enterprise_id`) names no other. Another workspace of the same
    organisation (a Grid DM, a channel shared across its workspaces) is then not external.
    """
    enterprise = _optional_str(body, "enterprise_id", "enterprise_id")
    shared = body.get("is_ext_shared_channel")
    if not enterprise or shared is not False:
        return False
    context = _optional_str(body, "context_enterprise_id", "context_enterprise_id")
    if context is not None and context != enterprise:
        return False
    authorizations = body.get("authorizations")
    if isinstance(authorizations, list) and authorizations:
        first = authorizations[0]
        if isinstance(first, Mapping):
            path = "authorizations.0.enterprise_id"
            if _optional_str(first, "enterprise_id", path) != enterprise:
                return False
    return True


def extract_bot_user_id(body: EventCallbackBody | Mapping[str, Any]) -> str | None:
    """The user id of the bot the delivery was made for: the first authorization's `user_id`."""
    authorizations = body.get("authorizations")
    if authorizations is None:
        return None
    if not isinstance(authorizations, list):
        raise _wrong_type("authorizations", authorizations, "list")
    if not authorizations:
        return None
    first = authorizations[0]
    if not isinstance(first, Mapping):
        raise _wrong_type("authorizations.0", first, "object")
    return _optional_str(first, "user_id", "authorizations.0.user_id")


def to_datetime(ts: str, field: str) -> datetime:
    """A Slack `ts` (`"1712345678.000200"`) as a UTC datetime, exact to the microsecond.

    A timestamp is decimal digits, optionally followed by `.` and at least one more digit;
    digits past the sixth after the point are dropped. Raises `PayloadError` naming `field` when
    `ts` is not a Slack timestamp, or is one outside the years 1970-2999.
    """
    seconds, point, fraction = ts.partition(".")
    # `str.isdecimal` is exactly the regex `\d` (Unicode category Nd), which `int` accepts.
    if (
        not seconds.isdecimal()
        or len(seconds) > _SECONDS_DIGITS
        or (point and not fraction.isdecimal())
    ):
        raise PayloadError(
            f"Slack payload field '{field}' is not a timestamp: {quoted(ts)}",
            details={"field": field},
        )
    # In whole microseconds: the seconds, then the fraction cut or padded to six digits.
    microseconds = int(seconds + fraction[:6].ljust(6, "0"))
    if microseconds >= _LAST_MICROSECOND:
        raise PayloadError(
            f"Slack payload field '{field}' is not a time in years 1970-2999: {quoted(ts)}",
            details={"field": field},
        )
    return EARLIEST + _MICROSECOND * microseconds


def to_conversation(
    channel: str, channel_type: str | None, ts: str | None, thread_ts: str | None
) -> Conversation:
    """Where an event happened: by `channel_type` when it is a message one, else by id prefix.

    A reply (`thread_ts` present and not `ts`) carries the root's ts as `thread_id`; in a
    channel that makes it a THREAD, in a DM it stays a DM (Slack DMs have threads too).
    """
    thread_id = thread_ts if thread_ts is not None and thread_ts != ts else None
    return _conversation(channel, channel_type, thread_id)


def to_author(
    message: MessageEvent | Mapping[str, Any], team: str, path: str, *, same_org: bool = False
) -> Author:
    """Who posted `message` (found at `path`): its `user`, else its `bot_id`; `same_org` as
    for `is_external`.

    Raises `PayloadError` when it has neither.
    """
    user = _optional_str(message, "user", f"{path}.user")
    bot_id = _optional_str(message, "bot_id", f"{path}.bot_id")
    author_id = user or bot_id
    if not author_id:
        raise PayloadError(
            f"Slack payload is missing '{path}.user' (and has no '{path}.bot_id')",
            details={"field": f"{path}.user"},
        )
    is_bot = bool(bot_id) or message.get("subtype") == "bot_message"
    return _author(
        author_id,
        is_bot,
        _extract_display_name(message, path),
        is_external(message, team, path, same_org=same_org),
    )


def is_external(
    message: MessageEvent | Mapping[str, Any], team: str, path: str, *, same_org: bool = False
) -> bool:
    """Whether the author belongs to another organisation (Slack Connect).

    True when `user_team` or `source_team` is present and is not the receiving team; the
    first one that is decides, and a later one is not read. Never when `same_org` (the body
    says the delivery stays inside one Enterprise Grid organisation, `is_inside_enterprise`):
    the other team is then another workspace of the same organisation.
    """
    if same_org:
        return False
    for key in ("user_team", "source_team"):
        value = _optional_str(message, key, f"{path}.{key}")
        if value is not None and value != team:
            return True
    return False


def parse_message(envelope: Envelope, event: MessageEvent) -> ChatEvent | None:
    """A `message` event, dispatched on its subtype through `MESSAGE_PARSERS`."""
    parser = MESSAGE_PARSERS.get(_optional_str(event, "subtype", "event.subtype"))
    return None if parser is None else parser(envelope, event)


def parse_posted_message(envelope: Envelope, event: MessageEvent) -> ChatEvent | None:
    """A posted message (plain, `thread_broadcast`, `bot_message`, `me_message`, `file_share`)."""
    if event.get("hidden") is True:
        return None
    return _to_message(envelope, event)


def parse_app_mention(envelope: Envelope, event: AppMentionEvent) -> ChatEvent | None:
    """An `app_mention`: the same event, with the same id, as the `message` it copies, marked
    `names_receiver`: Slack sends it only to an app whose bot user the message names."""
    return replace(_to_message(envelope, event), names_receiver=True)


def parse_message_changed(envelope: Envelope, event: MessageChangedEvent) -> ChatEvent | None:
    """An edit of `event.message`, or None when nothing a person wrote changed.

    Slack also sends `message_changed` for unfurls, attachments and thread bookkeeping; those
    have no `edited` stamp or keep the previous text. `subtype` is the edited message's own.
    A message with replies is not deleted but left as a tombstone (`message.subtype`
    `tombstone`, "This message was deleted."): that is its deletion, the same event as a
    `message_deleted` of it would be.
    """
    channel = _str(event, "channel", "event.channel")
    message = _mapping(event, "message", "event.message")
    if _optional_str(message, "subtype", "event.message.subtype") == "tombstone":
        return _to_delete(envelope, event, channel, _str(message, "ts", "event.message.ts"))
    edited = _optional_mapping(message, "edited", "event.message.edited")
    if edited is None:
        return None
    text = _optional_str(message, "text", "event.message.text", MAX_TEXT) or ""
    previous = _optional_mapping(event, "previous_message", "event.previous_message")
    if previous is not None:
        path = "event.previous_message.text"
        previous_text = _optional_str(previous, "text", path, MAX_TEXT) or ""
        if text == previous_text:
            return None
    ts = _str(message, "ts", "event.message.ts")
    edited_ts = _str(edited, "ts", "event.message.edited.ts")
    thread_ts = _optional_str(message, "thread_ts", "event.message.thread_ts")
    return ChatEvent(
        event_id=f"{_message_event_id(envelope.team, channel, ts)}~{edited_ts}",
        kind=EventKind.EDIT,
        platform=PLATFORM,
        workspace_id=envelope.team,
        conversation=to_conversation(channel, _channel_type(event), ts, thread_ts),
        author=to_author(message, envelope.team, "event.message", same_org=envelope.same_org),
        created_at=to_datetime(edited_ts, "event.message.edited.ts"),
        message_id=ts,
        text=text,
        mentions=extract_mentions(text),
        subtype=_optional_str(message, "subtype", "event.message.subtype"),
        files=len(_optional_list(message, "files", "event.message.files")),
        bot_user_id=envelope.bot_user_id,
        delivery_id=envelope.delivery_id,
    )


def parse_message_deleted(envelope: Envelope, event: MessageDeletedEvent) -> ChatEvent:
    """The deletion of message `deleted_ts`, by its author when `previous_message` says who.

    `created_at` is the time of the deletion; `subtype` is the deleted message's own.
    """
    channel = _str(event, "channel", "event.channel")
    return _to_delete(envelope, event, channel, _str(event, "deleted_ts", "event.deleted_ts"))


def _to_delete(
    envelope: Envelope,
    event: MessageDeletedEvent | MessageChangedEvent,
    channel: str,
    deleted_ts: str,
) -> ChatEvent:
    """The deletion of message `deleted_ts` in `channel`, reported by `event`."""
    when = _optional_str(event, "event_ts", "event.event_ts") or _str(event, "ts", "event.ts")
    previous = _optional_mapping(event, "previous_message", "event.previous_message")
    author = Author(id="")
    thread_ts = subtype = None
    if previous is not None:
        path = "event.previous_message"
        if previous.get("user") or previous.get("bot_id"):
            author = to_author(previous, envelope.team, path, same_org=envelope.same_org)
        thread_ts = _optional_str(previous, "thread_ts", f"{path}.thread_ts")
        subtype = _optional_str(previous, "subtype", f"{path}.subtype")
    return ChatEvent(
        event_id=f"{_message_event_id(envelope.team, channel, deleted_ts)}~deleted",
        kind=EventKind.DELETE,
        platform=PLATFORM,
        workspace_id=envelope.team,
        conversation=to_conversation(channel, _channel_type(event), deleted_ts, thread_ts),
        author=author,
        created_at=to_datetime(when, "event.event_ts"),
        message_id=deleted_ts,
        subtype=subtype,
        bot_user_id=envelope.bot_user_id,
        delivery_id=envelope.delivery_id,
    )


def parse_reaction_added(envelope: Envelope, event: ReactionEvent) -> ChatEvent | None:
    """A reaction put on a message; None for reactions on files and other items."""
    return _to_reaction(envelope, event, EventKind.REACTION_ADDED, "+")


def parse_reaction_removed(envelope: Envelope, event: ReactionEvent) -> ChatEvent | None:
    """A reaction taken off a message; None for reactions on files and other items."""
    return _to_reaction(envelope, event, EventKind.REACTION_REMOVED, "-")


def parse_member_joined_channel(envelope: Envelope, event: MemberChannelEvent) -> ChatEvent:
    """Someone joined a channel; the author is whoever joined, not whoever invited them."""
    return _to_membership(envelope, event, EventKind.MEMBER_JOINED, "joined")


def parse_member_left_channel(envelope: Envelope, event: MemberChannelEvent) -> ChatEvent:
    """Someone left a channel."""
    return _to_membership(envelope, event, EventKind.MEMBER_LEFT, "left")


EVENT_PARSERS: Mapping[str, Parser] = {
    "message": parse_message,
    "app_mention": parse_app_mention,
    "reaction_added": parse_reaction_added,
    "reaction_removed": parse_reaction_removed,
    "member_joined_channel": parse_member_joined_channel,
    "member_left_channel": parse_member_left_channel,
}

# Keyed by `subtype`; None is a plain message. Subtypes not listed (channel_join, channel_topic,
# message_replied, ...) are ignored.
MESSAGE_PARSERS: Mapping[str | None, Parser] = {
    None: parse_posted_message,
    "thread_broadcast": parse_posted_message,
    "bot_message": parse_posted_message,
    "me_message": parse_posted_message,
    "file_share": parse_posted_message,
    "message_changed": parse_message_changed,
    "message_deleted": parse_message_deleted,
}


def _parse_plain_message(body: Mapping[str, Any], event: Mapping[str, Any]) -> ChatEvent | None:
    """`parse_message(to_envelope(body), event)` for a plain message (no subtype), in one pass.

    Reads each field it needs once and checks them all together. An event out of the everyday
    shape (a field missing, of the wrong type or past its bounds, no `team_id`, any of
    `_NOT_IN_A_PLAIN_MESSAGE`) goes to the general path instead, which builds the same event or
    raises the `PayloadError` naming the field. The two checks left to helpers here,
    `authorizations` and then the `ts` format, come in the same order as in the general path,
    so the first problem found in a body is the same whichever path it takes.
    """
    team = body.get("team_id")
    event_time = body.get("event_time")
    delivery_id = body.get("event_id")
    channel = event.get("channel")
    ts = event.get("ts")
    user = event.get("user")
    text = event.get("text")
    thread_ts = event.get("thread_ts")
    channel_type = event.get("channel_type")
    files = event.get("files")
    if not (
        type(team) is str
        and 0 < len(team) <= MAX_NAME
        and (event_time is None or (type(event_time) is int and 0 <= event_time < _LAST_SECOND))
        and (delivery_id is None or (type(delivery_id) is str and len(delivery_id) <= MAX_NAME))
        and type(channel) is str
        and 0 < len(channel) <= MAX_NAME
        and type(ts) is str
        and 0 < len(ts) <= MAX_NAME
        and type(user) is str
        and 0 < len(user) <= MAX_NAME
        and (text is None or (type(text) is str and len(text) <= MAX_TEXT))
        and (thread_ts is None or (type(thread_ts) is str and len(thread_ts) <= MAX_NAME))
        and (channel_type is None or (type(channel_type) is str and len(channel_type) <= MAX_NAME))
        and (files is None or type(files) is list)
        and _NOT_IN_A_PLAIN_MESSAGE.isdisjoint(event)
    ):
        return parse_message(to_envelope(body), cast(MessageEvent, event))
    bot_user_id = extract_bot_user_id(body)
    text = text or ""
    return ChatEvent(
        event_id=f"slack:{team}:{channel}:{ts}",  # `_message_event_id`, inlined
        kind=_MESSAGE,
        platform=PLATFORM,
        workspace_id=team,
        conversation=_conversation(channel, channel_type, None if thread_ts == ts else thread_ts),
        author=_person(user),
        created_at=to_datetime(ts, "event.ts"),
        message_id=ts,
        text=text,
        mentions=extract_mentions(text),
        files=len(files) if files else 0,
        bot_user_id=bot_user_id,
        delivery_id=delivery_id,
    )


def _to_message(envelope: Envelope, event: MessageEvent | AppMentionEvent) -> ChatEvent:
    channel = _str(event, "channel", "event.channel")
    ts = _str(event, "ts", "event.ts")
    text = _optional_str(event, "text", "event.text", MAX_TEXT) or ""
    thread_ts = _optional_str(event, "thread_ts", "event.thread_ts")
    subtype = _optional_str(event, "subtype", "event.subtype")
    return ChatEvent(
        event_id=_message_event_id(envelope.team, channel, ts),
        kind=EventKind.MESSAGE,
        platform=PLATFORM,
        workspace_id=envelope.team,
        conversation=to_conversation(channel, _channel_type(event), ts, thread_ts),
        author=to_author(event, envelope.team, "event", same_org=envelope.same_org),
        created_at=to_datetime(ts, "event.ts"),
        message_id=ts,
        text=text,
        mentions=extract_mentions(text),
        subtype=subtype,
        files=len(_optional_list(event, "files", "event.files")),
        bot_user_id=envelope.bot_user_id,
        delivery_id=envelope.delivery_id,
        also_in_channel=subtype == "thread_broadcast",
    )


def _to_reaction(
    envelope: Envelope, event: ReactionEvent, kind: EventKind, sign: str
) -> ChatEvent | None:
    item = _mapping(event, "item", "event.item")
    if _optional_str(item, "type", "event.item.type") != "message":
        return None
    channel = _str(item, "channel", "event.item.channel")
    item_ts = _str(item, "ts", "event.item.ts")
    user = _str(event, "user", "event.user")
    reaction = _str(event, "reaction", "event.reaction")
    event_ts = _event_ts(envelope, event)
    message_event_id = _message_event_id(envelope.team, channel, item_ts)
    return ChatEvent(
        event_id=f"{message_event_id}{sign}{user}:{reaction}@{event_ts}",
        kind=kind,
        platform=PLATFORM,
        workspace_id=envelope.team,
        conversation=to_conversation(channel, _channel_type(item), item_ts, None),
        author=Author(id=user),
        created_at=to_datetime(event_ts, "event.event_ts"),
        message_id=item_ts,
        target_author_id=_optional_str(event, "item_user", "event.item_user"),
        reaction=reaction,
        bot_user_id=envelope.bot_user_id,
        delivery_id=envelope.delivery_id,
    )


def _to_membership(
    envelope: Envelope, event: MemberChannelEvent, kind: EventKind, verb: str
) -> ChatEvent:
    channel = _str(event, "channel", "event.channel")
    user = _str(event, "user", "event.user")
    event_ts = _event_ts(envelope, event)
    return ChatEvent(
        event_id=f"slack:{envelope.team}:{channel}:{verb}:{user}@{event_ts}",
        kind=kind,
        platform=PLATFORM,
        workspace_id=envelope.team,
        conversation=to_conversation(channel, _channel_type(event), None, None),
        author=Author(id=user),
        created_at=to_datetime(event_ts, "event.event_ts"),
        user_id=user,
        bot_user_id=envelope.bot_user_id,
        delivery_id=envelope.delivery_id,
    )


def _message_event_id(team: str, channel: str, ts: str) -> str:
    return f"slack:{team}:{channel}:{ts}"


# Conversations, authors and mention sets repeat from event to event and are immutable, so each
# distinct one is built once and shared; the caches are bounded, and a rebuilt one compares equal.
@lru_cache(maxsize=4096)
def _conversation(channel: str, channel_type: str | None, thread_id: str | None) -> Conversation:
    kind, group = _CHANNEL_TYPES.get(channel_type or "", (None, False))
    if kind is None:
        kind = ConversationKind.DM if channel.startswith("D") else ConversationKind.CHANNEL
    if kind is ConversationKind.CHANNEL and thread_id is not None:
        kind = ConversationKind.THREAD
    return Conversation(id=channel, kind=kind, thread_id=thread_id, group=group)


@lru_cache(maxsize=4096)
def _author(id_: str, bot: bool, display_name: str | None, external: bool) -> Author:
    kind = AuthorKind.BOT if bot else AuthorKind.HUMAN
    return Author(id=id_, kind=kind, display_name=display_name, external=external)


@lru_cache(maxsize=4096)
def _person(user: str) -> Author:
    """The author of a plain message: a person of the receiving team, with no display name."""
    return Author(id=user)


@lru_cache(maxsize=4096)
def _collect_mentions(matches: tuple[tuple[str, str, str], ...]) -> Mentions:
    """The mentions in the `(user, role, broadcast)` groups of `_MENTION` matches, each once."""
    users: dict[str, None] = {}
    roles: dict[str, None] = {}
    broadcast: dict[Broadcast, None] = {}
    for user, role, everyone in matches:
        if user:
            users[user] = None
        elif role:
            roles[role] = None
        else:
            broadcast[Broadcast(everyone)] = None
    return Mentions(users=tuple(users), roles=tuple(roles), broadcast=tuple(broadcast))


def _channel_type(event: Mapping[str, Any]) -> str | None:
    return _optional_str(event, "channel_type", "event.channel_type")


def _event_ts(envelope: Envelope, event: Mapping[str, Any]) -> str:
    """The event's own `event_ts`, else the body's whole-second `event_time`."""
    event_ts = _optional_str(event, "event_ts", "event.event_ts")
    if event_ts:
        return event_ts
    if envelope.event_time is not None:
        return str(envelope.event_time)
    raise PayloadError("Slack payload is missing 'event.event_ts'", {"field": "event.event_ts"})


def _extract_display_name(message: Mapping[str, Any], path: str) -> str | None:
    if (
        message.get("user_profile") is None
        and message.get("bot_profile") is None
        and message.get("username") is None
    ):
        return None  # the usual case: nothing that could name the author
    profile = _optional_mapping(message, "user_profile", f"{path}.user_profile") or {}
    bot = _optional_mapping(message, "bot_profile", f"{path}.bot_profile") or {}
    candidates = (
        _optional_str(profile, "display_name", f"{path}.user_profile.display_name"),
        _optional_str(profile, "real_name", f"{path}.user_profile.real_name"),
        _optional_str(message, "username", f"{path}.username"),
        _optional_str(bot, "name", f"{path}.bot_profile.name"),
    )
    return next((name for name in candidates if name), None)


def _str(obj: Mapping[str, Any], key: str, path: str) -> str:
    value = _optional_str(obj, key, path)
    if not value:
        raise PayloadError(f"Slack payload is missing '{path}'", details={"field": path})
    return value


def _optional_str(obj: Mapping[str, Any], key: str, path: str, limit: int = MAX_NAME) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _wrong_type(path, value, "string")
    if len(value) > limit:
        raise PayloadError(
            f"Slack payload field '{path}' {too_long(value, limit)}", details={"field": path}
        )
    return value


def _mapping(obj: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = _optional_mapping(obj, key, path)
    if value is None:
        raise PayloadError(f"Slack payload is missing '{path}'", details={"field": path})
    return value


def _optional_mapping(obj: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any] | None:
    value = obj.get(key)
    # `type(...) is dict` first: it is the usual case, and far cheaper than the ABC check.
    if value is not None and type(value) is not dict and not isinstance(value, Mapping):
        raise _wrong_type(path, value, "object")
    return value


def _optional_list(obj: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong_type(path, value, "list")
    return value


def _wrong_type(path: str, value: object, expected: str) -> PayloadError:
    where = f"field '{path}'" if path else "body"
    return PayloadError(
        f"Slack payload {where} should be {expected}, not {type(value).__name__}",
        details={"field": path},
    )
