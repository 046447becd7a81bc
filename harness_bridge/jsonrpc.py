"""The JSON-RPC 2.0 messages and the `initialize` handshake that opens every C2A session.

Here are the request, notification and response models, the one parse path from a line of the
wire to one of them (`parse_line`: anything else becomes a `BadLine` value saying why and how
JSON-RPC wants it answered, never an exception), the capabilities each side declares, the
protocol versions this implementation speaks with how one is negotiated, and `WireModel`, the
base of every wire model (camelCase on the wire, frozen, unknown fields dropped).
`harness_bridge.wire` models chat/deliver and the notifications on top and re-exports all of
this. Only the harness bridge speaks JSON-RPC: the host's core hands it typed values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from core.errors import LinkError

__all__ = [
    "COMPACT_VIEW",
    "FULL_ENVELOPE",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_INITIALIZE",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PROTOCOL_VERSIONS",
    "BadLine",
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
    "Message",
    "ProtocolError",
    "UtilityCapabilities",
    "WireModel",
    "common_capabilities",
    "encode_message",
    "negotiate_version",
    "parse_line",
    "parse_message",
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


# The messages' `to_wire` builds the dict by hand: params, results and data are the peer's JSON,
# passed on as they are (pydantic's serializer would refuse deep nesting that JSON allows).


class JsonRpcRequest(WireModel):
    """A JSON-RPC request: it wants a response carrying the same `id`."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: str | int
    method: str
    params: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"jsonrpc": "2.0", "id": self.id, "method": self.method}
        if self.params is not None:
            wire["params"] = self.params
        return wire


class JsonRpcNotification(WireModel):
    """A JSON-RPC notification: fire and forget, no `id`, no response."""

    jsonrpc: Literal["2.0"] = "2.0"
    method: str
    params: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"jsonrpc": "2.0", "method": self.method}
        if self.params is not None:
            wire["params"] = self.params
        return wire


class JsonRpcError(WireModel):
    """The `error` member of a failed response."""

    code: int
    message: str
    data: Any | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            wire["data"] = self.data
        return wire


class JsonRpcResponse(WireModel):
    """A JSON-RPC response: protocol acceptance (`result`) or refusal (`error`), never both."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: str | int | None
    result: Any | None = None
    error: JsonRpcError | None = None

    def to_wire(self) -> dict[str, Any]:
        """As sent: the `id` (null too), and the `error` or else the `result` (null too)."""
        wire: dict[str, Any] = {"jsonrpc": "2.0", "id": self.id}
        if self.error is None:
            wire["result"] = self.result
        else:
            wire["error"] = self.error.to_wire()
        return wire


Message: TypeAlias = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

_PREVIEW = 200  # characters of a bad line kept to say which line it was


class ProtocolError(LinkError):
    """A message that cannot be put on the wire: not JSON-encodable, or nested too deep."""

    code = "protocol_error"


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that is not a JSON-RPC message: how it began, why, and how to answer it.

    With `answer`, JSON-RPC wants an error response: `code`, to `id` (null when no id could be
    read). A malformed response or notification is never answered; a malformed response's
    readable `id` names the call it was meant to answer."""

    text: str
    reason: str
    code: int = PARSE_ERROR
    id: str | int | None = None
    answer: bool = True


def encode_message(message: Mapping[str, Any]) -> bytes:
    """One message as compact JSON on one line (without the newline); raises ProtocolError
    when it cannot be encoded."""
    try:
        return orjson.dumps(message)
    except orjson.JSONEncodeError as exc:
        raise ProtocolError(f"a message that cannot be sent as JSON: {exc}") from None


def parse_line(line: bytes) -> Message | BadLine:
    """One line from the wire as a typed message, or a `BadLine` (never an exception). Bytes
    that are not UTF-8 are read as U+FFFD."""
    text = line.decode("utf-8", errors="replace").strip()
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return BadLine(text[:_PREVIEW], f"not JSON ({exc.msg} at column {exc.colno})")
    return parse_message(value, text[:_PREVIEW])


def parse_message(value: object, text: str = "") -> Message | BadLine:
    """A decoded JSON value as a typed message, or a `BadLine` saying what is wrong (`text`
    says which line it came from). An object with a `method` is a request or notification;
    one with a `result`, an `error` or only an `id` is a response; batches (arrays) are not
    supported and are invalid requests."""
    if isinstance(value, list):
        return BadLine(text, "batch messages are not supported", INVALID_REQUEST)
    if not isinstance(value, dict):
        return BadLine(text, "a message must be a JSON object", INVALID_REQUEST)
    if "method" in value:
        return _request(value, text)
    if "result" in value or "error" in value or "id" in value:
        return _response(value, text)
    return BadLine(text, "neither a request, a notification nor a response", INVALID_REQUEST)


def _request(value: dict[str, Any], text: str) -> Message | BadLine:
    rid, method, params = value.get("id"), value["method"], value.get("params")
    has_id = "id" in value
    answer_to = rid if _is_id(rid) else None
    problem = _version_problem(value)
    if problem is None and not isinstance(method, str):
        problem = f"method must be a string, not {_kind(method)}"
    if problem is None and has_id and not _is_id(rid):
        problem = f"id must be a string or an integer, not {_kind(rid)}"
    if problem is not None:
        return BadLine(text, problem, INVALID_REQUEST, answer_to)
    if params is not None and not isinstance(params, dict):
        reason = f"params must be an object, not {_kind(params)}"
        return BadLine(text, reason, INVALID_PARAMS, answer_to, answer=has_id)
    if has_id:
        return JsonRpcRequest.model_construct(id=rid, method=method, params=params)
    return JsonRpcNotification.model_construct(method=method, params=params)


def _response(value: dict[str, Any], text: str) -> Message | BadLine:
    rid, error = value.get("id"), value.get("error")
    problem = _version_problem(value)
    if problem is None and not (rid is None or _is_id(rid)):
        problem = f"id must be a string, an integer or null, not {_kind(rid)}"
    if problem is None and "id" not in value:
        problem = "a response needs an id"
    if problem is None and error is None and "result" not in value:
        problem = "a response needs a result or an error"
    if problem is None and error is not None:
        problem = _error_problem(error) if "result" not in value else "both result and error"
    if problem is not None:
        reason = f"malformed response: {problem}"
        return BadLine(text, reason, INVALID_REQUEST, rid if _is_id(rid) else None, answer=False)
    if error is None:
        return JsonRpcResponse.model_construct(id=rid, result=value["result"])
    refusal = JsonRpcError.model_construct(
        code=error["code"], message=error["message"], data=error.get("data")
    )
    return JsonRpcResponse.model_construct(id=rid, error=refusal)


def _error_problem(error: object) -> str | None:
    if not isinstance(error, dict):
        return f"error must be an object, not {_kind(error)}"
    code, message = error.get("code"), error.get("message")
    if not isinstance(code, int) or isinstance(code, bool):
        return f"error.code must be an integer, not {_kind(code)}"
    if not isinstance(message, str):
        return f"error.message must be a string, not {_kind(message)}"
    return None


def _version_problem(value: dict[str, Any]) -> str | None:
    if "jsonrpc" not in value:
        return 'jsonrpc: "2.0" is missing'
    version = value["jsonrpc"]
    if version == "2.0":
        return None
    found = repr(version[:20]) if isinstance(version, str) else _kind(version)
    return f'jsonrpc must be "2.0", not {found}'


def _is_id(value: object) -> bool:
    """JSON-RPC ids here are strings or integers (null only in a response)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _kind(value: object) -> str:
    """The JSON type of a decoded value, to say what was found without echoing it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a fractional number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


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
