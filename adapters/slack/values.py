"""The values every Slack parser reads out of an event: times, conversations, authors, mentions
and message ids, each from the raw fields, pure.

Conversations, authors and mention sets repeat from event to event and are immutable, so each
distinct one is built once and shared; the caches are bounded, and a rebuilt one compares equal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, Final

from adapters.limits import EARLIEST, epoch_limit, quoted
from adapters.slack.envelope import PLATFORM, Envelope
from adapters.slack.fields import missing, optional_mapping, optional_str
from adapters.slack.types import MessageEvent
from core.errors import PayloadError
from core.events import Author, AuthorKind, Broadcast, Conversation, ConversationKind, Mentions

__all__ = [
    "channel_type",
    "event_ts",
    "extract_mentions",
    "is_external",
    "message_event_id",
    "to_author",
    "to_conversation",
    "to_datetime",
]

_MICROSECOND: Final = timedelta(microseconds=1)
# Whole seconds in a Slack timestamp: twelve digits reach past the year 33000, so any more are
# absurd, and `int` is never asked to read thousands of them.
_SECONDS_DIGITS: Final = 12
_LAST_MICROSECOND: Final = epoch_limit(_MICROSECOND)
_NO_MENTIONS: Final = Mentions()
_MENTION: Final = re.compile(
    r"<(?:@(?P<user>[UW][A-Z0-9]+)"
    r"|!subteam\^(?P<role>[A-Z0-9]+)"
    r"|!(?P<broadcast>here|channel|everyone))"
    r"(?:\|[^>]*)?>"
)
# `channel_type` of message events; member events use one letter (`C`, `G`) and reactions may
# omit it, and those fall back to the channel id prefix.
_CHANNEL_TYPES: Final[Mapping[str, tuple[ConversationKind, bool]]] = {
    "im": (ConversationKind.DM, False),
    "mpim": (ConversationKind.DM, True),
    "channel": (ConversationKind.CHANNEL, False),
    "group": (ConversationKind.CHANNEL, False),
}
_OTHER_TEAMS: Final = ("user_team", "source_team")


def message_event_id(team: str, channel: str, ts: str) -> str:
    """The event id of the message `ts` in `channel`."""
    return f"{PLATFORM}:{team}:{channel}:{ts}"


def extract_mentions(text: str) -> Mentions:
    """Everyone Slack markup in `text` names, each once, in order of first appearance.

    `<@U123>`/`<@U123|name>` (and `W` ids) are users, `<!subteam^S123>` user groups (roles),
    `<!here>`, `<!channel>`, `<!everyone>` broadcasts; labels after `|` are ignored.
    """
    if "<" not in text:  # no markup at all, so no mentions: skip the regex
        return _NO_MENTIONS
    return _collect_mentions(tuple(_MENTION.findall(text)))


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
    channel: str, kind: str | None, ts: str | None, thread_ts: str | None
) -> Conversation:
    """Where an event happened: by its `channel_type` (`kind`) when that is a message one, else
    by the channel id's prefix.

    A reply (`thread_ts` present and not `ts`) carries the root's ts as `thread_id`; in a
    channel that makes it a THREAD, in a DM it stays a DM (Slack DMs have threads too).
    """
    thread_id = thread_ts if thread_ts is not None and thread_ts != ts else None
    return _conversation(channel, kind, thread_id)


def to_author(
    message: MessageEvent | Mapping[str, Any], team: str, path: str, *, same_org: bool = False
) -> Author:
    """Who posted `message` (found at `path`): its `user`, else its `bot_id`; `same_org` as
    for `is_external`.

    Raises `PayloadError` when it has neither.
    """
    user = optional_str(message, "user", path)
    bot_id = optional_str(message, "bot_id", path)
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
    if same_org or ("user_team" not in message and "source_team" not in message):
        return False  # the usual case: a person of the receiving team
    for key in _OTHER_TEAMS:
        value = optional_str(message, key, path)
        if value is not None and value != team:
            return True
    return False


def channel_type(event: Mapping[str, Any], where: str = "event") -> str | None:
    """The `channel_type` of the event (or of its item) at `where`."""
    return optional_str(event, "channel_type", where)


def event_ts(envelope: Envelope, event: Mapping[str, Any]) -> str:
    """The event's own `event_ts`, else the body's whole-second `event_time`."""
    ts = optional_str(event, "event_ts", "event")
    if ts:
        return ts
    if envelope.event_time is not None:
        return str(envelope.event_time)
    raise missing("event.event_ts")


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


def _extract_display_name(message: Mapping[str, Any], path: str) -> str | None:
    if (
        message.get("user_profile") is None
        and message.get("bot_profile") is None
        and message.get("username") is None
    ):
        return None  # the usual case: nothing that could name the author
    profile = optional_mapping(message, "user_profile", path) or {}
    bot = optional_mapping(message, "bot_profile", path) or {}
    candidates = (
        optional_str(profile, "display_name", f"{path}.user_profile"),
        optional_str(profile, "real_name", f"{path}.user_profile"),
        optional_str(message, "username", path),
        optional_str(bot, "name", f"{path}.bot_profile"),
    )
    return next((name for name in candidates if name), None)
