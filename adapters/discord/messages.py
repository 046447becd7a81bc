"""Parsing Discord's message dispatches (`MESSAGE_CREATE`, `MESSAGE_UPDATE`, `MESSAGE_DELETE`,
`MESSAGE_DELETE_BULK`), one function per wire event, pure."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Final

from adapters.discord import types
from adapters.discord.fields import Fields, snowflake_time
from adapters.discord.files import extract_attachments
from adapters.discord.values import Place, message_author, to_event, to_place
from adapters.limits import quoted
from core.events import Author, Broadcast, ChatEvent, EventKind, Mentions

__all__ = [
    "MAX_BULK",
    "MESSAGE_TYPES",
    "parse_message_create",
    "parse_message_delete",
    "parse_message_delete_bulk",
    "parse_message_update",
]

MESSAGE_TYPES: Final = frozenset({0, 19, 20, 23})
"""Message `type`s that are someone saying something: DEFAULT, REPLY, CHAT_INPUT_COMMAND and
CONTEXT_MENU_COMMAND. Every other type is a system notice and is not a message."""

MAX_BULK: Final = 1_000
"""Ids in one `MESSAGE_DELETE_BULK`: Discord deletes at most 100 at once."""

# `message_reference.type` 1 is a forward: it quotes another message without answering it.
_FORWARD: Final = 1


def parse_message_create(d: types.MessageCreateEvent) -> ChatEvent | None:
    """A `MESSAGE_CREATE`; `None` for a system notice (a `type` outside `MESSAGE_TYPES`)."""
    f = Fields(d, "MESSAGE_CREATE")
    if f.integer("type") not in MESSAGE_TYPES:
        return None
    message_id = f.text("id")
    place = to_place(f)
    content = f.message_text("content") or ""
    author = message_author(f, f.obj("author"))
    created_at = f.iso_time("timestamp")
    event_id = f"discord:{message_id}"
    return _to_said(f, place, event_id, EventKind.MESSAGE, author, created_at, message_id, content)


def parse_message_update(d: types.MessageUpdateEvent) -> ChatEvent | None:
    """A `MESSAGE_UPDATE` that edits text; `None` for other updates (embed unfurls, pins).

    Only an update with `content` and an `edited_timestamp` is an edit. Its id carries the edit
    time, so an update that repeats an edit already seen (a pin of an edited message) has the
    same id and the ledger drops it.
    """
    f = Fields(d, "MESSAGE_UPDATE")
    content = f.message_text("content")
    edited_at = f.opt_text("edited_timestamp")
    if content is None or edited_at is None:
        return None
    message_type = f.opt_int("type")
    if message_type is not None and message_type not in MESSAGE_TYPES:
        return None
    message_id = f.text("id")
    place = to_place(f)
    user = f.opt_obj("author")
    author = message_author(f, user) if user is not None else Author(id="")
    created_at = f.iso_time("edited_timestamp")
    event_id = f"discord:{message_id}~{edited_at}"
    return _to_said(f, place, event_id, EventKind.EDIT, author, created_at, message_id, content)


def parse_message_delete(d: types.MessageDeleteEvent) -> ChatEvent:
    """A `MESSAGE_DELETE`: ids only, so no author and the message's own creation time."""
    f = Fields(d, "MESSAGE_DELETE")
    return _to_delete(f, f.text("id"), f.snowflake_time("id"))


def parse_message_delete_bulk(d: types.MessageDeleteBulkEvent) -> ChatEvent | None:
    """A `MESSAGE_DELETE_BULK` (a moderator's purge): one carrier whose `batch` holds, for each
    id once, the very event a `MESSAGE_DELETE` of that message gives; `None` when `ids` is
    empty. More than `MAX_BULK` ids raise `PayloadError`."""
    f = Fields(d, "MESSAGE_DELETE_BULK")
    ids = tuple(dict.fromkeys(f.texts("ids")))
    if len(ids) > MAX_BULK:
        raise f.invalid("ids", f"holds {len(ids):,} ids, at most {MAX_BULK:,}")
    deletes = tuple(_to_delete(f, message_id, _id_time(f, message_id)) for message_id in ids)
    if not deletes:
        return None
    first = deletes[0]
    return replace(first, event_id=f"discord:{ids[0]}..{ids[-1]}~deleted", batch=deletes)


def _to_delete(f: Fields, message_id: str, created_at: datetime) -> ChatEvent:
    event_id = f"discord:{message_id}~deleted"
    return to_event(
        to_place(f), event_id, EventKind.DELETE, Author(id=""), created_at, message_id=message_id
    )


def _id_time(f: Fields, message_id: str) -> datetime:
    """The time in one of the ids of a bulk delete."""
    try:
        return snowflake_time(message_id)
    except ValueError:
        raise f.invalid("ids", f"holds what is not a snowflake: {quoted(message_id)}") from None


def _to_said(
    f: Fields,
    place: Place,
    event_id: str,
    kind: EventKind,
    author: Author,
    created_at: datetime,
    message_id: str,
    content: str,
) -> ChatEvent:
    """Message `message_id` or its edit, saying `content`: whom it names, answers and what it
    carries."""
    return to_event(
        place,
        event_id,
        kind,
        author,
        created_at,
        message_id=message_id,
        text=content,
        mentions=_mentions(f, content),
        reply_to=_reply_to(f),
        target_author_id=_target_author_id(f),
        files=f.count("attachments"),
        attachments=extract_attachments(f),
    )


def _mentions(f: Fields, content: str) -> Mentions:
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


def _reply_to(f: Fields) -> str | None:
    """The message this one answers: `message_reference`, unless the reference is a forward."""
    reference = f.opt_obj("message_reference")
    if reference is None or reference.opt_int("type") == _FORWARD:
        return None
    return reference.opt_text("message_id")


def _target_author_id(f: Fields) -> str | None:
    """The author of the replied-to message; `referenced_message` is null once that is deleted."""
    referenced = f.opt_obj("referenced_message")
    return referenced.obj("author").text("id") if referenced is not None else None
