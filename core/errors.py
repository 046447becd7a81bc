"""The project's one exception tree: every error it raises on purpose is a `C2AError`.

    C2AError                  base: code, message, details; str() is for people
    ├── PayloadError          a native platform payload the normaliser cannot read
    ├── ManifestError         a workspace manifest (or a backend's settings) that does not validate
    ├── TraceError            a replay trace line that is not a trace record
    ├── StoreError            the ledger refused or failed an operation
    ├── RenderError           an action that cannot become a platform message (both adapters)
    ├── SendError             the platform did not take an outbound action
    │   ├── TransientSendError    not now (rate limit, outage): the outbox retries later
    │   ├── PermanentSendError    never (no such channel, not allowed): the action fails
    │   └── SendOutcomeUnknown    it may have landed: the outbox looks before any resend
    ├── LinkError             the C2A link to a harness
    │   ├── ProtocolError         a message that cannot go on the wire (harness_bridge/jsonrpc.py)
    │   ├── RpcError              a JSON-RPC error answer (harness_bridge/rpc.py)
    │   │   └── MalformedResponse     an answer that is not a response (harness_bridge/rpc.py)
    │   └── SessionError          no session agreed in `initialize` (harness_bridge/session.py)
    ├── ToolError             a chat tool call refused or malformed; the model reads why
    ├── ModelError            the model server failed or answered no chat completion
    │   └── ModelRefusedTurn      it is up, but fails this turn (HTTP 400, a broken answer)
    ├── IngestFailed          the engine failed on one event, rolled back (c2a/group_commit.py)
    ├── AccessRefused         a web chat request not from the web chat's own page
    └── HarnessUnreachable    an agent's harness cannot be started (c2a/probes.py)

Classes without a path are defined here. Foreign exceptions (pydantic, sqlite3, json, the
platforms' SDKs) are mapped to these at the boundary that meets them; whatever else escapes is
a bug, and the loops that must go on log it with its traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

__all__ = [
    "AccessRefused",
    "C2AError",
    "LinkError",
    "ManifestError",
    "ModelError",
    "ModelRefusedTurn",
    "PayloadError",
    "PermanentSendError",
    "RenderError",
    "SendError",
    "SendOutcomeUnknown",
    "StoreError",
    "ToolError",
    "TraceError",
    "TransientSendError",
]


class C2AError(Exception):
    """Base of every error the project raises on purpose; `code` names the kind for machines,
    `details` holds what a log or a test needs to tell which input was at fault. A subclass
    names its own code in its header (`class StoreError(C2AError, code="store_error")`); one
    that names none keeps its parent's."""

    code: ClassVar[str] = "error"

    def __init_subclass__(cls, code: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code

    def __init__(self, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def __str__(self) -> str:
        return self.message


class PayloadError(C2AError, code="invalid_payload"):
    """A platform payload is missing something the normaliser needs, or has the wrong type."""


class ManifestError(C2AError, code="invalid_manifest"):
    """A workspace manifest is unreadable or invalid; the message names file, key path and why."""


class TraceError(C2AError, code="invalid_trace_line"):
    """A replay trace line is not JSON or not a trace record."""


class StoreError(C2AError, code="store_error"):
    """The ledger could not do what was asked."""


class RenderError(C2AError, code="render_failed"):
    """An action that cannot become a platform message (an unknown or unbound recipient, no
    text)."""


class SendError(C2AError, code="send_error"):
    """The platform did not take an outbound action; the subclass says what the outbox does."""


class TransientSendError(SendError, code="send_transient"):
    """The platform could not take the action now (rate limit, outage); try again later."""


class PermanentSendError(SendError, code="send_failed"):
    """The platform refused the action for good (no such channel, not allowed)."""


class SendOutcomeUnknown(SendError, code="send_outcome_unknown"):
    """The action may or may not have landed; the outbox marks it ambiguous and calls the
    sender's `find` before any resend."""


class LinkError(C2AError, code="link_error"):
    """Something on the C2A link to a harness failed: framing, an RPC answer, the handshake."""


class ToolError(C2AError, code="tool_refused"):
    """A tool call that is refused or malformed; the message tells the model why."""


class ModelError(C2AError, code="model_unavailable"):
    """The model server failed or answered something that is not a chat completion (HTTP
    error, timeout, refused connection, unreadable body). The turn's events stay pending: this
    says the model is unavailable, not that the events failed."""


class ModelRefusedTurn(ModelError, code="model_refused_turn"):
    """The model answered, but not this turn: the server refused the request (HTTP 400, 413,
    422: too long for its context, say), wrote something that is no chat completion, or the
    model in this process failed on it. Tried again the same way it may fail the same way, so
    a turn is tried a few times and then fails, rather than holding its agent down."""


class AccessRefused(C2AError, code="access_refused"):
    """A request that is not from the web chat's own page: another Host, no or a wrong token,
    or a foreign Origin."""
