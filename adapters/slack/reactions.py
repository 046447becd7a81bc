"""Parsing Slack's `reaction_added` and `reaction_removed` events, pure."""

from __future__ import annotations

from adapters.slack.envelope import Envelope, to_event
from adapters.slack.fields import mapping, optional_str, required_str
from adapters.slack.types import ReactionEvent
from adapters.slack.values import (
    channel_type,
    event_ts,
    message_event_id,
    to_conversation,
    to_datetime,
)
from core.events import Author, ChatEvent, EventKind

__all__ = ["parse_reaction_added", "parse_reaction_removed"]


def parse_reaction_added(envelope: Envelope, event: ReactionEvent) -> ChatEvent | None:
    """A reaction put on a message; None for reactions on files and other items."""
    return _to_reaction(envelope, event, EventKind.REACTION_ADDED, "+")


def parse_reaction_removed(envelope: Envelope, event: ReactionEvent) -> ChatEvent | None:
    """A reaction taken off a message; None for reactions on files and other items."""
    return _to_reaction(envelope, event, EventKind.REACTION_REMOVED, "-")


def _to_reaction(
    envelope: Envelope, event: ReactionEvent, kind: EventKind, sign: str
) -> ChatEvent | None:
    item = mapping(event, "item", "event")
    if optional_str(item, "type", "event.item") != "message":
        return None
    channel = required_str(item, "channel", "event.item")
    item_ts = required_str(item, "ts", "event.item")
    user = required_str(event, "user", "event")
    reaction = required_str(event, "reaction", "event")
    when = event_ts(envelope, event)
    on = message_event_id(envelope.team, channel, item_ts)
    return to_event(
        envelope,
        f"{on}{sign}{user}:{reaction}@{when}",
        kind,
        to_conversation(channel, channel_type(item, "event.item"), item_ts, None),
        Author(id=user),
        to_datetime(when, "event.event_ts"),
        message_id=item_ts,
        target_author_id=optional_str(event, "item_user", "event"),
        reaction=reaction,
    )
