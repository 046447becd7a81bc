"""What a replay writes for each emission: a `Record` naming the agent, what kind of thing it
is and its JSON body. A harness's message is built by the harness bridge, exactly as the
agent's deliverer would send it; a queued action is the outbox's stored form of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from core.action_records import to_record
from core.emission import Emission, Escalation, Queued
from harness_bridge.envelope import message

__all__ = ["Record", "record_of"]


@dataclass(slots=True)
class Record:
    """One output line: for `agent`, what `kind` of thing (`rpc`, the JSON-RPC message its
    harness is sent; `outbound`, an outbox record; `escalation`; `turn`, a model turn with its
    prompt) and its `body`."""

    agent: Final[str]
    kind: Final[str]
    body: Final[dict[str, Any]]


def record_of(emission: Emission, *, compact: bool = False) -> Record:
    """The output line of an emission; a harness's message is built as its deliverer would."""
    match emission:
        case Queued(action=action):
            return Record(emission.agent, "outbound", to_record(action))
        case Escalation():
            body = {
                "reason": emission.reason,
                "conversation": emission.conversation,
                "eventId": emission.event_id,
            }
            if emission.responsible is not None:
                body["responsible"] = emission.responsible
            return Record(emission.agent, "escalation", body)
    return Record(emission.agent, "rpc", message(emission, compact=compact))
