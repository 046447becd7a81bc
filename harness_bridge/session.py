"""The `initialize` handshake of a C2A link, from either side, and what it settled.

The host offers every protocol version it speaks; the harness answers with the highest one
both speak (A2ACP's rule) and its capabilities; the session keeps the intersection, so the
host never sends what the harness did not accept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from core.decision import InjectionMode
from core.errors import LinkError
from harness_bridge.jsonrpc import (
    COMPACT_VIEW,
    METHOD_INITIALIZE,
    PROTOCOL_VERSIONS,
    Capabilities,
    ClientInfo,
    InitializeParams,
    InitializeResult,
    common_capabilities,
    negotiate_version,
)
from harness_bridge.rpc import INVALID_PARAMS, Connection, RpcError

__all__ = ["Session", "SessionError", "accept_initialize", "initialize"]

# What a mode the harness did not accept becomes: the event still arrives, with less exposure.
_FALLBACK: dict[InjectionMode, InjectionMode] = {
    InjectionMode.IMMEDIATE: InjectionMode.BUFFERED,
    InjectionMode.BUFFERED: InjectionMode.NOTIFY,
    InjectionMode.NOTIFY: InjectionMode.TOOL_MAILBOX,
    InjectionMode.DIGEST: InjectionMode.TOOL_MAILBOX,
}


class SessionError(LinkError):
    """The two sides could not agree on a session (no common version, a malformed answer)."""

    code = "session_error"


@dataclass(frozen=True, slots=True)
class Session:
    """What `initialize` settled: the version, the peer, and the capabilities both accept."""

    version: str
    peer: ClientInfo
    capabilities: Capabilities

    @property
    def compact(self) -> bool:
        """Whether deliveries also carry spec 001's compact fields."""
        return self.version == COMPACT_VIEW

    def accepts(self, mode: InjectionMode) -> bool:
        injection = self.capabilities.injection
        accepted = {
            InjectionMode.IMMEDIATE: injection.immediate,
            InjectionMode.BUFFERED: injection.buffered,
            InjectionMode.NOTIFY: injection.notify,
            InjectionMode.TOOL_MAILBOX: injection.tool_mailbox,
            InjectionMode.DIGEST: injection.digest,
            InjectionMode.SILENT: True,
        }
        return accepted[mode]

    def mode_for(self, mode: InjectionMode) -> InjectionMode:
        """The mode to send: `mode` if the harness accepted it, else the nearest accepted mode
        that exposes less (immediate → buffered → notify → tool_mailbox; digest →
        tool_mailbox); `silent` is always accepted."""
        while not self.accepts(mode):
            mode = _FALLBACK.get(mode, InjectionMode.SILENT)
        return mode


async def initialize(
    connection: Connection,
    info: ClientInfo,
    capabilities: Capabilities,
    *,
    versions: Sequence[str] = PROTOCOL_VERSIONS,
    timeout: float = 10.0,
) -> Session:
    """The host's side: offer `versions`, check the answer, return the session.
    Raises SessionError when the harness picks a version not offered or answers nonsense."""
    params = InitializeParams(
        protocol_version=max(versions),
        client_info=info,
        capabilities=capabilities,
        supported_versions=list(versions),
    )
    try:
        raw = await connection.request(METHOD_INITIALIZE, params.to_wire(), timeout=timeout)
    except RpcError as exc:
        raise SessionError(f"the harness refused initialize: {exc.message}") from None
    try:
        result = InitializeResult.model_validate(raw)
    except ValidationError as exc:
        raise SessionError(
            f"the harness answered initialize with an invalid result: {exc}"
        ) from None
    if result.protocol_version not in versions:
        raise SessionError(
            f"the harness chose protocol version {result.protocol_version}, "
            f"which was not offered ({', '.join(versions)})"
        )
    return Session(
        version=result.protocol_version,
        peer=result.server_info,
        capabilities=common_capabilities(capabilities, result.capabilities),
    )


def accept_initialize(
    connection: Connection,
    info: ClientInfo,
    capabilities: Capabilities,
    *,
    versions: Sequence[str] = PROTOCOL_VERSIONS,
    on_session: Callable[[Session], None] | None = None,
) -> None:
    """The harness's side: answer `initialize` with the highest common version and these
    capabilities; `on_session(session)` is called with what was settled. A host that offers
    no version in common gets an invalid-params error listing the versions spoken here."""

    async def handle(params: dict[str, Any] | None) -> dict[str, Any]:
        try:
            offer = InitializeParams.model_validate(params or {})
        except ValidationError as exc:
            raise RpcError(INVALID_PARAMS, f"invalid initialize params: {exc}") from None
        version = negotiate_version(versions, offer.protocol_version, offer.supported_versions)
        if version is None:
            raise RpcError(
                INVALID_PARAMS, "no protocol version in common", {"supported": list(versions)}
            )
        if on_session is not None:
            on_session(
                Session(
                    version,
                    offer.client_info,
                    common_capabilities(capabilities, offer.capabilities),
                )
            )
        return InitializeResult(
            protocol_version=version, server_info=info, capabilities=capabilities
        ).to_wire()

    connection.on_request(METHOD_INITIALIZE, handle)
