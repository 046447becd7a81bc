"""What the engine hands back to be sent: a message for a harness, a queued platform action,
or an escalation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = ["Emission"]


@dataclass(slots=True)
class Emission:
    """Something the host sends on behalf of the engine: `kind` is `rpc` (a JSON-RPC message
    for the agent's harness), `outbound` (a platform action queued in the outbox under its
    idempotency key) or `escalation` (a conversation that needs the lead). Immutable through
    its `Final` fields (see `core.events.ChatEvent`)."""

    agent: Final[str]
    kind: Final[str]
    body: Final[dict[str, Any]]
