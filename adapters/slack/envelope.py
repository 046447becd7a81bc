"""What the outer `event_callback` body says about one delivery, and the event every parser
stamps with it: the team, the bot the delivery was made for, Slack's delivery id and time, and
whether the delivery stays inside one Enterprise Grid organisation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from adapters.limits import epoch_limit
from adapters.slack.fields import mapping, missing, optional_str, wrong_type
from adapters.slack.types import EventCallbackBody
from core.errors import PayloadError
from core.events import Author, ChatEvent, Conversation, EventKind

__all__ = [
    "LAST_SECOND",
    "PLATFORM",
    "Envelope",
    "Parser",
    "extract_bot_user_id",
    "is_inside_enterprise",
    "to_envelope",
    "to_event",
]

PLATFORM: Final = "slack"

LAST_SECOND: Final = epoch_limit(timedelta(seconds=1))
"""A count of seconds since the epoch is a time in `adapters.limits`' range below this."""


@dataclass(slots=True)
class Envelope:
    """What the outer body says about one delivery, shared by every parser.

    Immutable through its `Final` fields; not `frozen=True`, which would cost a call per field
    on every payload (as `core.events.ChatEvent` explains)."""

    team: Final[str]
    bot_user_id: Final[str | None] = None
    delivery_id: Final[str | None] = None
    event_time: Final[int | None] = None
    same_org: Final[bool] = False


# The raw event is typed `Any` here because each parser checks its fields as it reads them.
Parser = Callable[[Envelope, Any], ChatEvent | None]
"""A parser of one inner event type (or message subtype): None when it is not for the core."""


def to_envelope(body: EventCallbackBody | Mapping[str, Any]) -> Envelope:
    """The delivery facts of a body; the team is `team_id`, else the inner event's `team`."""
    team = optional_str(body, "team_id", "")
    if not team:
        team = optional_str(mapping(body, "event", ""), "team", "event")
    if not team:
        raise missing("team_id")
    event_time = body.get("event_time")
    if isinstance(event_time, bool) or not isinstance(event_time, int | None):
        raise wrong_type("event_time", event_time, "int")
    if event_time is not None and not 0 <= event_time < LAST_SECOND:
        raise PayloadError(
            "Slack payload field 'event_time' is not a time in years 1970-2999",
            details={"field": "event_time"},
        )
    return Envelope(
        team,
        extract_bot_user_id(body),
        optional_str(body, "event_id", ""),
        event_time,
        is_inside_enterprise(body),
    )


def to_event(
    envelope: Envelope,
    event_id: str,
    kind: EventKind,
    conversation: Conversation,
    author: Author,
    created_at: datetime,
    **fields: Any,
) -> ChatEvent:
    """The Slack `ChatEvent` of `envelope`'s delivery; `fields` are the kind's own."""
    return ChatEvent(
        event_id=event_id,
        kind=kind,
        platform=PLATFORM,
        workspace_id=envelope.team,
        conversation=conversation,
        author=author,
        created_at=created_at,
        bot_user_id=envelope.bot_user_id,
        delivery_id=envelope.delivery_id,
        **fields,
    )


def is_inside_enterprise(body: EventCallbackBody | Mapping[str, Any]) -> bool:
    """Whether the delivery stays inside one Enterprise Grid organisation.

    True when the body names an `enterprise_id`, says the channel is not shared with another
    organisation (`is_ext_shared_channel` false, not merely absent), the installation
    (`authorizations.0.enterprise_id`, when the body has one) is of that organisation, and the
    channel's context (`context_enterprise_id`) names no other. Another workspace of the same
    organisation (a Grid DM, a channel shared across its workspaces) is then not external.
    """
    if body.get("enterprise_id") is None:
        return False  # the usual case: no Enterprise Grid organisation
    enterprise = optional_str(body, "enterprise_id", "")
    shared = body.get("is_ext_shared_channel")
    if not enterprise or shared is not False:
        return False
    context = optional_str(body, "context_enterprise_id", "")
    if context is not None and context != enterprise:
        return False
    authorizations = body.get("authorizations")
    if isinstance(authorizations, list) and authorizations:
        first = authorizations[0]
        path = "authorizations.0"
        if isinstance(first, Mapping) and optional_str(first, "enterprise_id", path) != enterprise:
            return False
    return True


def extract_bot_user_id(body: EventCallbackBody | Mapping[str, Any]) -> str | None:
    """The user id of the bot the delivery was made for: the first authorization's `user_id`."""
    authorizations = body.get("authorizations")
    if authorizations is None:
        return None
    if not isinstance(authorizations, list):
        raise wrong_type("authorizations", authorizations, "list")
    if not authorizations:
        return None
    first = authorizations[0]
    if not isinstance(first, Mapping):
        raise wrong_type("authorizations.0", first, "object")
    return optional_str(first, "user_id", "authorizations.0")
