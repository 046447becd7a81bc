"""Parsing Slack's `message` events (posted, edited, deleted) and `app_mention`, one function
per wire event or message subtype, pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from adapters.limits import MAX_TEXT
from adapters.slack.envelope import Envelope, Parser, to_event
from adapters.slack.fields import (
    mapping,
    optional_list,
    optional_mapping,
    optional_str,
    required_str,
)
from adapters.slack.files import extract_attachments
from adapters.slack.types import (
    AppMentionEvent,
    MessageChangedEvent,
    MessageDeletedEvent,
    MessageEvent,
)
from adapters.slack.values import (
    channel_type,
    extract_mentions,
    message_event_id,
    to_author,
    to_conversation,
    to_datetime,
)
from core.events import Author, ChatEvent, EventKind

__all__ = [
    "MESSAGE_PARSERS",
    "parse_app_mention",
    "parse_message",
    "parse_message_changed",
    "parse_message_deleted",
    "parse_posted_message",
]


def parse_message(envelope: Envelope, event: MessageEvent) -> ChatEvent | None:
    """A `message` event, dispatched on its subtype through `MESSAGE_PARSERS`."""
    parser = MESSAGE_PARSERS.get(optional_str(event, "subtype", "event"))
    return None if parser is None else parser(envelope, event)


def parse_posted_message(envelope: Envelope, event: MessageEvent) -> ChatEvent | None:
    """A posted message (plain, `thread_broadcast`, `bot_message`, `me_message`, `file_share`);
    None for a hidden one."""
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
    channel = required_str(event, "channel", "event")
    message = mapping(event, "message", "event")
    if optional_str(message, "subtype", "event.message") == "tombstone":
        return _to_delete(envelope, event, channel, required_str(message, "ts", "event.message"))
    edited = optional_mapping(message, "edited", "event.message")
    if edited is None:
        return None
    said = optional_str(message, "text", "event.message", MAX_TEXT) or ""
    previous = optional_mapping(event, "previous_message", "event")
    before = None
    if previous is not None:
        before = optional_str(previous, "text", "event.previous_message", MAX_TEXT) or ""
    if said == before:
        return None
    required_str(message, "ts", "event.message")  # read before the edit's time, as always
    edited_ts = required_str(edited, "ts", "event.message.edited")
    return _to_said(envelope, event, channel, message, "event.message", edited_ts)


def parse_message_deleted(envelope: Envelope, event: MessageDeletedEvent) -> ChatEvent:
    """The deletion of message `deleted_ts`, by its author when `previous_message` says who.

    `created_at` is the time of the deletion; `subtype` is the deleted message's own.
    """
    channel = required_str(event, "channel", "event")
    return _to_delete(envelope, event, channel, required_str(event, "deleted_ts", "event"))


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


def _to_message(envelope: Envelope, event: MessageEvent | AppMentionEvent) -> ChatEvent:
    channel = required_str(event, "channel", "event")
    return _to_said(envelope, event, channel, event, "event", None)


def _to_said(
    envelope: Envelope,
    event: Mapping[str, Any],
    channel: str,
    message: Mapping[str, Any],
    where: str,
    edited_ts: str | None,
) -> ChatEvent:
    """`message` (found at `where` in `event`) as posted in `channel`, or, with `edited_ts`, as
    edited then."""
    ts = required_str(message, "ts", where)
    said = optional_str(message, "text", where, MAX_TEXT) or ""
    thread_ts = optional_str(message, "thread_ts", where)
    subtype = optional_str(message, "subtype", where)
    event_id = message_event_id(envelope.team, channel, ts)
    kind, when, when_field = EventKind.MESSAGE, ts, f"{where}.ts"
    if edited_ts is not None:
        event_id = f"{event_id}~{edited_ts}"
        kind, when, when_field = EventKind.EDIT, edited_ts, f"{where}.edited.ts"
    return to_event(
        envelope,
        event_id,
        kind,
        to_conversation(channel, channel_type(event), ts, thread_ts),
        to_author(message, envelope.team, where, same_org=envelope.same_org),
        to_datetime(when, when_field),
        message_id=ts,
        text=said,
        mentions=extract_mentions(said),
        subtype=subtype,
        files=len(optional_list(message, "files", where)),
        attachments=extract_attachments(message, where),
        also_in_channel=edited_ts is None and subtype == "thread_broadcast",
    )


def _to_delete(
    envelope: Envelope,
    event: MessageDeletedEvent | MessageChangedEvent,
    channel: str,
    deleted_ts: str,
) -> ChatEvent:
    """The deletion of message `deleted_ts` in `channel`, reported by `event`."""
    when = optional_str(event, "event_ts", "event") or required_str(event, "ts", "event")
    previous = optional_mapping(event, "previous_message", "event")
    author = Author(id="")
    thread_ts = subtype = None
    if previous is not None:
        path = "event.previous_message"
        if previous.get("user") or previous.get("bot_id"):
            author = to_author(previous, envelope.team, path, same_org=envelope.same_org)
        thread_ts = optional_str(previous, "thread_ts", path)
        subtype = optional_str(previous, "subtype", path)
    return to_event(
        envelope,
        f"{message_event_id(envelope.team, channel, deleted_ts)}~deleted",
        EventKind.DELETE,
        to_conversation(channel, channel_type(event), deleted_ts, thread_ts),
        author,
        to_datetime(when, "event.event_ts"),
        message_id=deleted_ts,
        subtype=subtype,
    )
