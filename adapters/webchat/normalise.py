"""Turning one web chat payload into a core `ChatEvent`: pure, like the Slack and Discord ones.

The web chat (`adapters.webchat.server`) is its own small chat platform, so its payloads are
its own: flat JSON objects it builds from what a browser or an agent did, with the mentions
already resolved against the roster (`find_mentions`, which the server calls, so a payload is
as explicit as Slack's `<@U…>` markup). Ids follow the platform rules of `core.events`:

    {"type": "message", "workspace": "local", "id": "17", "channel": "general",
     "thread": "12", "user": "ana", "ts": "2026-11-22T14:00:00.000001Z", "text": "@lead hi",
     "mentions": {"users": ["lead"], "roles": [], "broadcast": []}, "replyTo": null}

`type` is `message`, `edit`, `delete`, `reaction_added`, `reaction_removed`, `typing` or
`member_joined` (the platform seats each agent in each channel once). A
channel named `dm:<person>:<agent>` is a direct message. A message's event id is
`webchat:<workspace>:<id>`; an edit's adds `~<ts>`, a delete's `~deleted`, a reaction's
`+<user>:<emoji>@<ts>`. Unknown types give None; a missing or mistyped field, or one past the
bounds of `adapters.limits` (an over-long string, a time outside years 1970-2999), raises
`PayloadError` naming it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from adapters.limits import MAX_NAME, MAX_TEXT, is_plausible, quoted, too_long
from core.errors import PayloadError
from core.events import (
    Author,
    Broadcast,
    ChatEvent,
    Conversation,
    ConversationKind,
    EventKind,
    Mentions,
)

__all__ = [
    "PLATFORM",
    "dm_channel",
    "event_id",
    "event_id_of",
    "find_mentions",
    "is_dm",
    "kept_under",
    "lacked",
    "normalise",
]

PLATFORM: Final = "webchat"

_MENTION = re.compile(r"(?<![\w@])@([a-z0-9][a-z0-9_-]{0,62})\b", re.IGNORECASE)
_BROADCASTS: Final = {b.value: b for b in Broadcast}
_KINDS: Final = {
    "message": EventKind.MESSAGE,
    "edit": EventKind.EDIT,
    "delete": EventKind.DELETE,
    "reaction_added": EventKind.REACTION_ADDED,
    "reaction_removed": EventKind.REACTION_REMOVED,
    "typing": EventKind.TYPING,
    "member_joined": EventKind.MEMBER_JOINED,
}


def event_id(workspace: str, message_id: str) -> str:
    """The event id of a web chat message."""
    return f"{PLATFORM}:{workspace}:{message_id}"


def event_id_of(payload: Mapping[str, Any]) -> str | None:
    """The id of the event `payload` normalises to; None when it is none or unreadable."""
    try:
        event = normalise(payload)
    except Exception:  # the host says what is wrong with it when it is handed over
        return None
    return None if event is None else event.event_id


def kept_under(payloads: Sequence[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """For each payload of a record, in order, the ids the ledger may keep its event under:
    its own, and for a reaction added or taken off again, those of the engine's later
    generations too (`core.reactions`: the k-th add of one person's emoji on one message, and
    its removal, may be `…#k`); none for a payload that is no event or cannot be read."""
    times: Counter[tuple[Any, ...]] = Counter()
    kept: list[tuple[str, ...]] = []
    for payload in payloads:
        event_id = event_id_of(payload)
        kind = payload.get("type")
        if event_id is None or kind not in ("reaction_added", "reaction_removed"):
            kept.append(() if event_id is None else (event_id,))
            continue
        key = (kind, payload.get("id"), payload.get("user"), payload.get("emoji"))
        times[key] += 1
        kept.append((event_id, *(f"{event_id}#{k}" for k in range(2, times[key] + 1))))
    return kept


def lacked(
    payloads: Sequence[Mapping[str, Any]], ids: Sequence[tuple[str, ...]], held: Collection[str]
) -> tuple[list[Mapping[str, Any]], int]:
    """The payloads of a record a ledger holding `held` lacks (`ids`: `kept_under`'s), to be
    handed to the host in order, and how many messages are left out as older than the ledger:
    a ledger holding nothing of the record is new beside it, and is handed only who joined
    where."""
    lacking: list[Mapping[str, Any]] = []
    older = 0
    for payload, kept in zip(payloads, ids, strict=True):
        if any(event_id in held for event_id in kept):
            continue
        if not held and payload.get("type") != "member_joined":
            older += payload.get("type") == "message"
        else:
            lacking.append(payload)
    return lacking, older


def dm_channel(person: str, agent: str) -> str:
    """The channel of a person's direct messages with an agent."""
    return f"dm:{person}:{agent}"


def is_dm(channel: str) -> bool:
    """Whether `channel` is a person's direct messages with an agent (`dm_channel`)."""
    return channel.startswith("dm:")


def find_mentions(text: str, users: Collection[str], roles: Collection[str]) -> Mentions:
    """The `@name`s in `text`, in any case (`@Lead`), that name someone in `users`, a role in
    `roles`, or `here`, `channel` or `everyone`; every other `@word` is just text."""
    known_users = {user.lower(): user for user in users}
    known_roles = {role.lower(): role for role in roles}
    found_users: list[str] = []
    found_roles: list[str] = []
    broadcast: list[Broadcast] = []
    for written in _MENTION.findall(text):
        name = written.lower()
        if (user := known_users.get(name)) is not None:
            if user not in found_users:
                found_users.append(user)
        elif (role := known_roles.get(name)) is not None:
            if role not in found_roles:
                found_roles.append(role)
        elif name in _BROADCASTS and _BROADCASTS[name] not in broadcast:
            broadcast.append(_BROADCASTS[name])
    return Mentions(tuple(found_users), tuple(found_roles), tuple(broadcast))


def normalise(payload: Mapping[str, Any]) -> ChatEvent | None:
    """The event a web chat payload describes, or None for a type it does not know.

    Raises `PayloadError` naming the field (`""` for the payload itself, when it is not an
    object) that is missing, mistyped or past its bounds."""
    if not isinstance(payload, Mapping):
        raise PayloadError(
            f"webchat: a payload must be an object, not {type(payload).__name__}", {"field": ""}
        )
    kind_name = payload.get("type")
    kind = _KINDS.get(kind_name) if isinstance(kind_name, str) else None
    if kind is None:
        return None
    workspace = _text(payload, "workspace")
    user = _text(payload, "user")
    at = _time(payload)
    conversation = _conversation(payload)
    common: dict[str, Any] = {
        "kind": kind,
        "platform": PLATFORM,
        "workspace_id": workspace,
        "conversation": conversation,
        "author": Author(user),
        "created_at": at,
    }
    if kind is EventKind.TYPING:
        typing_id = f"{PLATFORM}:{workspace}:typing:{conversation.key}:{user}@{payload['ts']}"
        return ChatEvent(event_id=typing_id, **common)
    if kind is EventKind.MEMBER_JOINED:
        joined_id = f"{PLATFORM}:{workspace}:joined:{conversation.id}:{user}"
        return ChatEvent(event_id=joined_id, user_id=user, **common)
    message_id = _text(payload, "id")
    base = event_id(workspace, message_id)
    common["message_id"] = message_id
    if kind in (EventKind.MESSAGE, EventKind.EDIT):
        eid = base if kind is EventKind.MESSAGE else f"{base}~{payload['ts']}"
        return ChatEvent(
            event_id=eid,
            text=_text(payload, "text", empty=True, limit=MAX_TEXT),
            mentions=_mentions(payload),
            reply_to=_optional(payload, "replyTo"),
            **common,
        )
    if kind is EventKind.DELETE:
        return ChatEvent(event_id=f"{base}~deleted", **common)
    emoji = _text(payload, "emoji")
    return ChatEvent(
        event_id=f"{base}+{user}:{emoji}@{payload['ts']}",
        reaction=emoji,
        target_author_id=_optional(payload, "itemUser"),
        **common,
    )


def _conversation(payload: Mapping[str, Any]) -> Conversation:
    channel = _text(payload, "channel")
    thread = _optional(payload, "thread")
    if is_dm(channel):
        return Conversation(channel, ConversationKind.DM, thread_id=thread)
    kind = ConversationKind.CHANNEL if thread is None else ConversationKind.THREAD
    return Conversation(channel, kind, thread_id=thread)


def _mentions(payload: Mapping[str, Any]) -> Mentions:
    raw = payload.get("mentions") or {}
    if not isinstance(raw, Mapping):
        raise PayloadError("webchat: mentions must be an object", {"field": "mentions"})
    users, roles = _names(raw, "users"), _names(raw, "roles")
    broadcast = tuple(_BROADCASTS[b] for b in _names(raw, "broadcast") if b in _BROADCASTS)
    return Mentions(users, roles, broadcast)


def _names(raw: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = raw.get(key) or []
    field = f"mentions.{key}"
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PayloadError(f"webchat: {field} must be a list of names", {"field": field})
    for name in value:
        _within(name, field, MAX_NAME)
    return tuple(value)


def _text(
    payload: Mapping[str, Any], key: str, *, empty: bool = False, limit: int = MAX_NAME
) -> str:
    value = payload.get(key)
    if not isinstance(value, str) or (not value and not empty):
        raise PayloadError(f"webchat: {key} must be a non-empty string", {"field": key})
    return _within(value, key, limit)


def _optional(payload: Mapping[str, Any], key: str) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise PayloadError(f"webchat: {key} must be a string or null", {"field": key})
    return _within(value, key, MAX_NAME)


def _within(value: str, field: str, limit: int) -> str:
    if len(value) > limit:
        raise PayloadError(f"webchat: {field} {too_long(value, limit)}", {"field": field})
    return value


def _time(payload: Mapping[str, Any]) -> datetime:
    raw = _text(payload, "ts")
    shown = quoted(raw)
    try:
        at = datetime.fromisoformat(raw)
    except ValueError:
        raise PayloadError(f"webchat: ts {shown} is not an ISO time", {"field": "ts"}) from None
    if at.tzinfo is None:
        raise PayloadError(f"webchat: ts {shown} has no time zone", {"field": "ts"})
    if not is_plausible(at):
        raise PayloadError(f"webchat: ts {shown} is not in years 1970-2999", {"field": "ts"})
    return at
