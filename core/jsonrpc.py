"""The JSON-RPC 2.0 messages and the `initialize` handshake that opens every C2A session.

Here are the request, notification and response models, the capabilities each side declares,
the protocol versions this implementation speaks with how one is negotiated, and `WireModel`, the
base of every wire model (camelCase on the wire, frozen, unknown fields dropped). `core.wire`
builds chat/deliver and the notifications on top and re-exports all of this.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = [
    "COMPACT_VIEW",
    "FULL_ENVELOPE",
    "METHOD_INITIALIZE",
    "PROTOCOL_VERSIONS",
    "Capabilities",
    "ChatToolCapabilities",
    "ClientInfo",
    "DeliveryCapabilities",
    "InitializeParams",
    "InitializeResult",
    "InjectionCapabilities",
    "JsonRpcError",
    "JsonRpcNotification",
    "JsonRpcRequest",
    "JsonRpcResponse",
    "UtilityCapabilities",
    "WireModel",
    "common_capabilities",
    "negotiate_version",
]

FULL_ENVELOPE: Final = "2026-06-02"
COMPACT_VIEW: Final = "2026-06-24"
PROTOCOL_VERSIONS: Final[tuple[str, ...]] = (FULL_ENVELOPE, COMPACT_VIEW)
"""Versions this implementation speaks, oldest to newest (ISO dates compare as strings)."""

METHOD_INITIALIZE: Final = "initialize"


class WireModel(BaseModel):
    """Base of every wire model: camelCase aliases, populate by name, unknown fields dropped."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict as sent on the wire: aliased names, `None` fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# --- JSON-RPC 2.0 ---------------------------------------------------------------------------


class JsonRpcRequest(WireModel):
    """A JSON-RPC request: it wants a response carrying the same `id`."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: str | int
    method: str
    params: dict[str, Any] | None = None


class JsonRpcNotification(WireModel):
    """A JSON-RPC notification: fire and forget, no `id`, no response."""

    jsonrpc: Literal["2.0"] = "2.0"
    method: str
    params: dict[str, Any] | None = None


class JsonRpcError(WireModel):
    """The `error` member of a failed response."""

    code: int
    message: str
    data: Any | None = None


class JsonRpcResponse(WireModel):
    """A JSON-RPC response: protocol acceptance (`result`) or refusal (`error`), never both."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: str | int | None
    result: Any | None = None
    error: JsonRpcError | None = None


# --- initialize -----------------------------------------------------------------------------


class ClientInfo(WireModel):
    """Name and version of one side (`clientInfo` in the request, `serverInfo` in the result)."""

    name: str
    version: str


class DeliveryCapabilities(WireModel):
    """Reliability features a side supports."""

    ack: bool = False
    redelivery: bool = False
    idempotency: bool = False


class InjectionCapabilities(WireModel):
    """Injection modes a side supports; `tool_mailbox` keeps its snake_case wire name."""

    immediate: bool = False
    buffered: bool = False
    notify: bool = False
    tool_mailbox: bool = Field(default=False, alias="tool_mailbox")
    digest: bool = False
    interrupt: bool = False


class ChatToolCapabilities(WireModel):
    """Chat tools a side offers or accepts."""

    read_thread: bool = False
    send_message: bool = False
    react: bool = False
    reaction_signals: bool = False
    claim: bool = False
    defer: bool = False
    resolve: bool = False


class UtilityCapabilities(WireModel):
    """Protocol utilities a side supports."""

    progress: bool = False
    cancellation: bool = False
    logging: bool = False


class Capabilities(WireModel):
    """Everything a side can do; an absent group or flag means "not supported"."""

    delivery: DeliveryCapabilities = Field(default_factory=DeliveryCapabilities)
    injection: InjectionCapabilities = Field(default_factory=InjectionCapabilities)
    chat_tools: ChatToolCapabilities = Field(default_factory=ChatToolCapabilities)
    utilities: UtilityCapabilities = Field(default_factory=UtilityCapabilities)


class InitializeParams(WireModel):
    """`initialize` request params: the preferred version, any others accepted, capabilities."""

    protocol_version: str
    client_info: ClientInfo
    capabilities: Capabilities = Field(default_factory=Capabilities)
    supported_versions: list[str] | None = None


class InitializeResult(WireModel):
    """`initialize` result: the negotiated version and the capabilities in force."""

    protocol_version: str
    server_info: ClientInfo
    capabilities: Capabilities = Field(default_factory=Capabilities)


def negotiate_version(
    ours: Sequence[str], offered: str, supported: Sequence[str] | None = None
) -> str | None:
    """The highest version in `ours` that the peer speaks, or None when there is none.

    The peer speaks `offered` and, when given, every version in `supported`. Versions we do not
    know (a future date, a typo) are simply never chosen.
    """
    theirs = {offered, *(supported or ())}
    common = [version for version in ours if version in theirs]
    return max(common) if common else None


_M = TypeVar("_M", bound=WireModel)


def _and_flags(a: _M, b: _M) -> _M:
    """Field-wise AND of two all-boolean capability groups."""
    names = type(a).model_fields
    return type(a)(**{name: bool(getattr(a, name) and getattr(b, name)) for name in names})


def common_capabilities(a: Capabilities, b: Capabilities) -> Capabilities:
    """What both sides support: every flag ANDed, so the host never sends what was refused."""
    return Capabilities(
        delivery=_and_flags(a.delivery, b.delivery),
        injection=_and_flags(a.injection, b.injection),
        chat_tools=_and_flags(a.chat_tools, b.chat_tools),
        utilities=_and_flags(a.utilities, b.utilities),
    )
