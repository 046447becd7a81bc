"""The C2A wire model: the chat/deliver envelope and notifications, exported as JSON Schemas by
`harness_bridge.schema`.

This is the specification's shape of each message, for harnesses to validate what they read (and
to publish as JSON Schema); the host builds the messages it sends as plain dicts, faster, in
`harness_bridge.envelope`, and the tests hold those to these models. JSON-RPC 2.0, `initialize`,
the capabilities and `WireModel` live in `harness_bridge.jsonrpc` and are re-exported here, so
this module names every wire model. Python names are snake_case; the wire is camelCase
(`event_id` <-> `eventId`), except the few names the spec spells otherwise (`tool_mailbox`,
`from`). Every model is frozen and drops unknown fields, because the protocol says unknown
fields are ignored. Dump with `WireModel.to_wire()` (`mode="json", by_alias=True,
exclude_none=True`).

Two views of chat/deliver exist. `DeliverParams` is the full envelope of spec 2026-06-02.
`CompactDeliverParams` is what a harness that negotiated 2026-06-24 receives: the same envelope,
`content` flattened to plain text, the typed parts moved to `contentParts`, plus spec 001's
`addressedToMe` and three-valued `policy`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import Field, field_validator

from core.decision import Directedness, InjectionMode, Policy, Priority
from core.revisions import LATE_AFTER
from harness_bridge.jsonrpc import (
    COMPACT_VIEW,
    FULL_ENVELOPE,
    METHOD_INITIALIZE,
    PROTOCOL_VERSIONS,
    Capabilities,
    ChatToolCapabilities,
    ClientInfo,
    DeliveryCapabilities,
    InitializeParams,
    InitializeResult,
    InjectionCapabilities,
    JsonRpcError,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    UtilityCapabilities,
    WireModel,
    common_capabilities,
    negotiate_version,
)

__all__ = [
    "COMPACT_VIEW",
    "FULL_ENVELOPE",
    "LATE_AFTER",
    "METHOD_CANCELLED",
    "METHOD_DELIVER",
    "METHOD_INITIALIZE",
    "METHOD_PROGRESS",
    "METHOD_TYPING",
    "PROTOCOL_VERSIONS",
    "AttachmentRef",
    "Attention",
    "AuthorRef",
    "CancelReason",
    "CancelledParams",
    "Capabilities",
    "ChatToolCapabilities",
    "ClientInfo",
    "CompactDeliverParams",
    "CompactPolicy",
    "ContentPart",
    "ConversationRef",
    "DeliverParams",
    "DeliverRequest",
    "DeliveryCapabilities",
    "InitializeParams",
    "InitializeResult",
    "Injection",
    "InjectionCapabilities",
    "JsonRpcError",
    "JsonRpcNotification",
    "JsonRpcRequest",
    "JsonRpcResponse",
    "Knock",
    "MembershipPart",
    "ProgressParams",
    "ReactionPart",
    "Reliability",
    "Source",
    "Target",
    "TextPart",
    "ThreadPart",
    "Timing",
    "TypingParams",
    "UtilityCapabilities",
    "WireModel",
    "common_capabilities",
    "compact_policy",
    "negotiate_version",
    "parse_deliver",
    "text_of",
    "to_compact",
]

METHOD_DELIVER: Final = "chat/deliver"
METHOD_CANCELLED: Final = "notifications/cancelled"
METHOD_PROGRESS: Final = "notifications/progress"
METHOD_TYPING: Final = "notifications/typing"

CompactPolicy = Literal["must_respond", "may_respond", "must_not_respond"]


def _check_rfc3339(value: str) -> str:
    """Accept an RFC 3339 date-time with an offset and return it unchanged, so it round-trips."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(f"not an RFC 3339 date-time: {value!r}") from exc
    if parsed.tzinfo is None or "T" not in value.upper():
        raise ValueError(f"not an RFC 3339 date-time with an offset: {value!r}")
    return value


# --- chat/deliver ---------------------------------------------------------------------------


class Source(WireModel):
    """The chat surface an event came from."""

    platform: str
    workspace_id: str
    message_id: str | None = None


class ConversationRef(WireModel):
    """Where the event happened."""

    id: str
    kind: Literal["dm", "channel", "thread", "system", "tool"]
    thread_id: str | None = None
    parent_id: str | None = None
    stream_id: str | None = None


class AuthorRef(WireModel):
    """Who caused the event; `agent_id` is set when the author is a bound agent."""

    id: str
    kind: Literal["human", "agent", "bot"]
    display_name: str | None = None
    agent_id: str | None = None


class Target(WireModel):
    """Whom the event is aimed at, as resolved by the host for the receiving agent."""

    mentions: list[str] = Field(default_factory=list)
    recipient: str | None = None
    directedness: Directedness


class TextPart(WireModel):
    """Message text (untrusted)."""

    type: Literal["text"] = "text"
    text: str


class ReactionPart(WireModel):
    """A reaction added to or removed from `message_id`; `signal` when it maps to one."""

    type: Literal["reaction"] = "reaction"
    action: Literal["added", "removed"]
    emoji: str
    signal: str | None = None
    message_id: str


class MembershipPart(WireModel):
    """A user joining or leaving the conversation."""

    type: Literal["membership"] = "membership"
    action: Literal["joined", "left"]
    user_id: str


class ThreadPart(WireModel):
    """A thread being created."""

    type: Literal["thread"] = "thread"
    thread_id: str
    name: str | None = None


ContentPart = Annotated[
    TextPart | ReactionPart | MembershipPart | ThreadPart, Field(discriminator="type")
]


class Timing(WireModel):
    """When the event happened (RFC 3339 string, kept verbatim) and its conversation order.

    `received_at`, an optional member the spec's `timing` leaves room for (unknown fields are
    ignored), is when the host received the event; it is there only for a late event, one the
    host received more than `LATE_AFTER` after it was sent (read from history after an outage,
    replayed by a resumed session, sent again by the platform), so a harness can tell the model."""

    created_at: str = Field(json_schema_extra={"format": "date-time"})
    sequence: int
    received_at: str | None = Field(default=None, json_schema_extra={"format": "date-time"})

    @field_validator("created_at", "received_at")
    @classmethod
    def _times_are_rfc3339(cls, value: str | None) -> str | None:
        return None if value is None else _check_rfc3339(value)


class Attention(WireModel):
    """The response rule and why; `claimed_by` names the agent holding a claim."""

    policy: Policy
    reason: str
    priority: Priority
    deadline_ms: int | None = None
    claimed_by: str | None = None


class Injection(WireModel):
    """How much of the event the model should see."""

    mode: InjectionMode
    context: str | None = None
    role: str | None = None


class Reliability(WireModel):
    """Delivery attempt (1 on first try) and the stable dedupe key `<eventId>:<agentId>`."""

    attempt: int = Field(ge=1)
    idempotency_key: str


class Knock(WireModel):
    """A `notify` knock: who, where and a host-written topic, with the body withheld."""

    from_: str = Field(validation_alias="from", serialization_alias="from")
    where: str
    directedness: Directedness
    policy: Policy
    priority: Priority
    topic: str
    pull_with: str


class AttachmentRef(WireModel):
    """A file on the message, as the platform described it (2026-11 addition, optional): its
    id (for `chat_read_file`), name, media type (empty when unknown) and size in bytes. The
    bytes are never in the envelope; a harness reads them with `chat_read_file`."""

    id: str
    name: str
    mimetype: str = ""
    size: int = Field(default=0, ge=0)


class _Envelope(WireModel):
    """The chat/deliver fields both views share (everything but `content`)."""

    event_id: str
    source: Source
    conversation: ConversationRef
    author: AuthorRef
    target: Target
    timing: Timing
    attention: Attention
    injection: Injection
    reliability: Reliability
    knock: Knock | None = None
    supersedes: str | None = None
    continues: str | None = None
    reminds: str | None = None
    attachments: list[AttachmentRef] | None = None


class DeliverParams(_Envelope):
    """Full chat/deliver params (2026-06-02); `content` is empty when withheld (notify)."""

    content: list[ContentPart] = Field(default_factory=list)


class CompactDeliverParams(_Envelope):
    """Compact chat/deliver params (2026-06-24): the envelope plus spec 001's fields."""

    content: str = ""
    content_parts: list[ContentPart] = Field(default_factory=list)
    addressed_to_me: bool
    policy: CompactPolicy


class DeliverRequest(WireModel):
    """A chat/deliver request in either view."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: str | int
    method: Literal["chat/deliver"] = "chat/deliver"
    params: DeliverParams | CompactDeliverParams


def compact_policy(policy: Policy) -> CompactPolicy:
    """Spec 001 has no `ack_only`: it becomes `must_not_respond` (reactions stay allowed)."""
    if policy == Policy.MUST_RESPOND:
        return "must_respond"
    if policy == Policy.MAY_RESPOND:
        return "may_respond"
    return "must_not_respond"


def text_of(parts: Sequence[ContentPart]) -> str:
    """The plain text of a message: its text parts joined by newlines."""
    return "\n".join(part.text for part in parts if isinstance(part, TextPart))


def to_compact(params: DeliverParams) -> CompactDeliverParams:
    """The 2026-06-24 view of a full envelope; nothing is dropped.

    `addressedToMe` is `directedness == to_me` (a DM or a resolved mention).
    """
    shared = {name: getattr(params, name) for name in _Envelope.model_fields}
    return CompactDeliverParams(
        **shared,
        content=text_of(params.content),
        content_parts=params.content,
        addressed_to_me=params.target.directedness == Directedness.TO_ME,
        policy=compact_policy(params.attention.policy),
    )


_COMPACT_ONLY = frozenset({"contentParts", "content_parts", "addressedToMe", "addressed_to_me"})


def parse_deliver(message: Mapping[str, Any]) -> DeliverParams | CompactDeliverParams:
    """Validate chat/deliver params (or a whole request, whose `params` are taken).

    The compact view is chosen when `content` is a string or a compact-only field is present.
    Raises pydantic.ValidationError when the params fit neither view.
    """
    params = message.get("params") if "method" in message else message
    if not isinstance(params, Mapping):
        return DeliverParams.model_validate(params)  # raises: params must be an object
    if isinstance(params.get("content"), str) or not _COMPACT_ONLY.isdisjoint(params):
        return CompactDeliverParams.model_validate(params)
    return DeliverParams.model_validate(params)


# --- notifications --------------------------------------------------------------------------


class CancelReason(StrEnum):
    """Why a pending delivery was cancelled."""

    DELETED = "deleted"
    SUPERSEDED = "superseded"
    CLAIMED_BY_OTHER = "claimed_by_other"
    EXPIRED = "expired"
    LEFT_CONVERSATION = "left_conversation"


class CancelledParams(WireModel):
    """notifications/cancelled: stop work on `event_id` (delivered by request `request_id`)."""

    request_id: str | int | None = None
    event_id: str
    reason: CancelReason


class ProgressParams(WireModel):
    """notifications/progress: a status update, never ordinary chat."""

    progress_token: str | int
    progress: float
    total: float | None = None
    message: str | None = None


class TypingParams(WireModel):
    """notifications/typing: `author_id` is typing in `conversation` until `until` (RFC 3339)."""

    conversation: ConversationRef
    author_id: str
    until: str = Field(json_schema_extra={"format": "date-time"})

    @field_validator("until")
    @classmethod
    def _until_is_rfc3339(cls, value: str) -> str:
        return _check_rfc3339(value)
