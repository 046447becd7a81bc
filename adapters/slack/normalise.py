"""The pure Slack Events API normaliser: one `event_callback` body in, one `ChatEvent` or None out.

No I/O, no network, no clock: everything comes from the body. `normalise` reads the delivery
facts (`adapters.slack.envelope`) and hands the inner event to the parser of its `type` in
`EVENT_PARSERS`, one per wire event (`adapters.slack.messages`, `.reactions`, `.members`); a
`message` is dispatched again on its subtype. There is one path for every payload, the everyday
plain message included, and it is the fast one: each field is read once, with a lookup and a
type check (`adapters.slack.fields`).

Event types and message subtypes the core has no use for come back as None and are never an
error; a handled event that lacks a field it needs, carries one of the wrong type, or one past
the bounds of `adapters.limits` (an over-long string, a timestamp outside years 1970-2999),
raises `PayloadError` naming the field as a dotted path (`event.ts`,
`event.message.edited.ts`); the body itself is the field `""`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from adapters.slack.envelope import PLATFORM, Parser, to_envelope
from adapters.slack.fields import mapping, optional_str, wrong_type
from adapters.slack.members import parse_member_joined_channel, parse_member_left_channel
from adapters.slack.messages import parse_app_mention, parse_message
from adapters.slack.reactions import parse_reaction_added, parse_reaction_removed
from adapters.slack.values import extract_mentions
from core.events import ChatEvent

__all__ = ["EVENT_PARSERS", "PLATFORM", "extract_mentions", "normalise"]

EVENT_PARSERS: Final[Mapping[str, Parser]] = {
    "message": parse_message,
    "app_mention": parse_app_mention,
    "reaction_added": parse_reaction_added,
    "reaction_removed": parse_reaction_removed,
    "member_joined_channel": parse_member_joined_channel,
    "member_left_channel": parse_member_left_channel,
}


def normalise(body: Mapping[str, Any]) -> ChatEvent | None:
    """Turn one whole `event_callback` body into a `ChatEvent`.

    Returns None for anything that is not an `event_callback` (`url_verification`,
    `app_rate_limited`), for event types and message subtypes that are not handled, for hidden
    messages, for `message_changed` that is no edit (unfurls), and for reactions on non-messages.
    Raises `PayloadError` when `body` is not an object, or a handled event lacks a field it
    needs or has one of a wrong type or past its bounds.
    """
    if type(body) is not dict and not isinstance(body, Mapping):
        raise wrong_type("", body, "object")
    if body.get("type") != "event_callback":
        return None
    event = mapping(body, "event", "")
    parser = EVENT_PARSERS.get(optional_str(event, "type", "event") or "")
    if parser is None:
        return None
    return parser(to_envelope(body), event)
