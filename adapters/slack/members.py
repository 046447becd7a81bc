"""Parsing Slack's `member_joined_channel` and `member_left_channel` events, pure."""

from __future__ import annotations

from adapters.slack.envelope import PLATFORM, Envelope, to_event
from adapters.slack.fields import required_str
from adapters.slack.types import MemberChannelEvent
from adapters.slack.values import channel_type, event_ts, to_conversation, to_datetime
from core.events import Author, ChatEvent, EventKind

__all__ = ["parse_member_joined_channel", "parse_member_left_channel"]


def parse_member_joined_channel(envelope: Envelope, event: MemberChannelEvent) -> ChatEvent:
    """Someone joined a channel; the author is whoever joined, not whoever invited them."""
    return _to_membership(envelope, event, EventKind.MEMBER_JOINED, "joined")


def parse_member_left_channel(envelope: Envelope, event: MemberChannelEvent) -> ChatEvent:
    """Someone left a channel."""
    return _to_membership(envelope, event, EventKind.MEMBER_LEFT, "left")


def _to_membership(
    envelope: Envelope, event: MemberChannelEvent, kind: EventKind, verb: str
) -> ChatEvent:
    channel = required_str(event, "channel", "event")
    user = required_str(event, "user", "event")
    when = event_ts(envelope, event)
    return to_event(
        envelope,
        f"{PLATFORM}:{envelope.team}:{channel}:{verb}:{user}@{when}",
        kind,
        to_conversation(channel, channel_type(event), None, None),
        Author(id=user),
        to_datetime(when, "event.event_ts"),
        user_id=user,
    )
