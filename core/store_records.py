"""The records the ledger's parts (`core.store`) take and return: ledger entries, deliveries,
claims, outbox entries, audit and quarantine records, gateway sessions, conversation marks and
leases, as frozen values."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

import orjson

from core.decision import Decision, Disposition

__all__ = [
    "AuditRecord",
    "ClaimResult",
    "ConversationMark",
    "GatewaySession",
    "Lease",
    "LedgerEntry",
    "OutboxEntry",
    "PrunedBatch",
    "QuarantineRecord",
    "SeenWhere",
    "Snapshot",
    "StoredDelivery",
    "quarantine_digest",
]


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One ledger record in the CCCS v1 envelope (`v`, `id`, `ts`, `seq`, `kind`, `by`, `data`)."""

    seq: int
    id: str
    ts: str
    kind: str
    by: str
    data: dict[str, Any]

    def envelope(self, group_id: str) -> dict[str, Any]:
        return {
            "v": 1,
            "id": self.id,
            "ts": self.ts,
            "seq": self.seq,
            "kind": self.kind,
            "group_id": group_id,
            "scope_key": "",
            "by": self.by,
            "data": self.data,
        }


@dataclass(frozen=True, slots=True)
class StoredDelivery:
    """A per-agent delivery record: the decision, its delivery status and its disposition."""

    decision: Decision
    seq: int
    status: str
    attempt: int
    disposition: Disposition | None


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """Who holds an item after a claim attempt; `granted` when it is the asker."""

    granted: bool
    holder: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    """An outbound platform action and how far it got: `pending`, `sending` (an attempt is in
    flight), `sent`, `failed`, or `ambiguous` (an attempt may have landed: check first)."""

    key: str
    agent: str
    action: dict[str, Any]
    status: str
    attempts: int
    result: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class GatewaySession:
    """Where a bot's gateway session stands: `seq` is the last dispatch whose event the ledger
    holds, so a RESUME from it replays exactly what is not yet in. `shard` is -1 unsharded;
    `updated_at` is when that dispatch was committed."""

    bot: str
    shard: int
    session_id: str
    resume_url: str
    seq: int
    updated_at: str


@dataclass(frozen=True, slots=True)
class ConversationMark:
    """The newest message the ledger holds in one conversation (or one thread of it, `thread`
    naming the thread, "" for none): its event id, the time the host received it, and the
    conversation's kind (`dm`, `channel`, ...)."""

    conversation: str
    kind: str
    event_id: str
    ts: str
    thread: str = ""


class SeenWhere(TypedDict, total=False):
    """What `Deliveries.seen_by` narrows to: one conversation (or one thread of it), events
    before or after a sequence number, deliveries in one injection mode."""

    conversation: str | None
    thread: str | None
    before_seq: int | None
    after_seq: int | None
    mode: str | None


@dataclass(frozen=True, slots=True)
class Lease:
    """A named lease (`agent:<id>`, `host:<holder>`), who holds it, and until when."""

    name: str
    holder: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """Something an agent did, or was asked or told, and how it ended (`AuditLog.audit`)."""

    at: str
    agent: str
    what: str
    outcome: str
    detail: dict[str, Any]

    @classmethod
    def of_row(cls, row: tuple[Any, ...]) -> AuditRecord:
        """The record of a row (at, agent, what, outcome, detail as JSON text)."""
        at, agent, what, outcome, detail = row
        return cls(str(at), str(agent), str(what), str(outcome), orjson.loads(detail))


@dataclass(frozen=True, slots=True)
class QuarantineRecord:
    """Input that could not be read (`AuditLog.quarantine`): when it first came, from where,
    and why; how many times it came, and when it last did, when more than once. Its payload
    stays in the store."""

    at: str
    source: str
    reason: str
    times: int = 1
    last_at: str | None = None


def quarantine_digest(source: str, reason: str, payload: str) -> str:
    """What makes a quarantined input the same as one already kept (`AuditLog.quarantine`)."""
    return hashlib.sha256(f"{source}\0{reason}\0{payload}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class PrunedBatch:
    """What one batch of retention dropped (rows of each kind, `core.store_prune` names them),
    and the highest ledger sequence number it looked at: the next batch starts after it."""

    dropped: dict[str, int]
    last: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The engine's memory as it stood after ledger record `seq`, written by code of `version`
    (`core.memory_snapshot` says what it holds and when it is used)."""

    seq: int
    version: str
    data: bytes
