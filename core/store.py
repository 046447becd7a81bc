"""The ledger's seam: the storage Protocols every backend implements.

One Protocol per responsibility, each implementable on its own: `Ledger` (events and who received
them), `Deliveries` (per-agent decisions and how they ended), `Claims`, `OutboxStore` (outbound
actions by idempotency key), `AuditLog` (audit, escalations, quarantine), `GatewaySessions`,
`Leases` (which process holds what, when several share one database), `Snapshots` (the engine's
memory saved at a clean stop) and `Retention` (dropping what is old). `Store` is all of them on one
database, with `open`, `close` and `transaction`. Code that needs one responsibility takes the small
Protocol. The records the parts take and return are `core.store_records`, named here too.

What every part guarantees: reads see the caller's own writes, also inside an open
transaction; whatever a part writes inside `Store.transaction()` becomes durable together with
everything else written there, or not at all; outside a transaction each call is its own.

It is over 400 lines because it is the whole contract a backend implements, each method's
promise stated once, beside the others a backend author must keep consistent with it; its
nine Protocols hold no code.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol, Unpack

from core.decision import Decision, Disposition
from core.store_records import (
    AuditRecord,
    ClaimResult,
    ConversationMark,
    GatewaySession,
    Lease,
    LedgerEntry,
    OutboxEntry,
    PrunedBatch,
    QuarantineRecord,
    SeenWhere,
    Snapshot,
    StoredDelivery,
)

__all__ = [
    "AuditLog",
    "AuditRecord",
    "ClaimResult",
    "Claims",
    "ConversationMark",
    "Deliveries",
    "GatewaySession",
    "GatewaySessions",
    "Lease",
    "Leases",
    "Ledger",
    "LedgerEntry",
    "OutboxEntry",
    "OutboxStore",
    "PrunedBatch",
    "QuarantineRecord",
    "Retention",
    "SeenWhere",
    "Snapshot",
    "Snapshots",
    "Store",
    "StoredDelivery",
    "entry_of",
]


class Ledger(Protocol):
    """The events, in the order the host took them, and which agents' connections received
    each one.

    `append` assigns strictly increasing sequence numbers in append order and refuses a second
    event with the same id (returning None, never raising); sequence numbers are never reused
    and a record is never removed, only its text erased (`tombstone`), unless the workspace's
    retention has outlived it (`Retention`). `add_receipt` is idempotent per (event, agent).
    """

    shared: bool
    """Whether other processes may write this ledger at once (PostgreSQL, not SQLite): an
    engine then folds in what they committed before it decides (`Engine.catch_up`). A shared
    ledger's transactions run one at a time across processes, each holding the ledger from its
    start, so events commit in sequence order and a read in a transaction misses none."""

    async def append(
        self, event_id: str, kind: str, by: str, data: Mapping[str, Any], ts: str
    ) -> int | None:
        """Append an event; its sequence number, or None when the id is already stored."""
        ...

    async def sequence_of(self, event_id: str) -> int | None:
        """The sequence number of the event with this id, None when it is not stored."""
        ...

    async def held(self, event_ids: Sequence[str]) -> set[str]:
        """Which of `event_ids` the ledger holds, in one read however many: a platform that
        hands its own record back at every start skips what is already in."""
        ...

    async def entry(self, seq: int) -> LedgerEntry | None:
        """The ledger record with this sequence number."""
        ...

    def ledger(self, since_seq: int = 0) -> AsyncIterator[LedgerEntry]:
        """The events after `since_seq`, in sequence order."""
        ...

    async def fill_text(self, event_id: str, text: str) -> None:
        """Give a stored message the text an earlier, content-less copy lacked."""
        ...

    async def tombstone(self, event_ids: list[str]) -> None:
        """Erase the text of these events (a deleted message and its edits), keeping the rest."""
        ...

    async def message_events(
        self, platform: str, conversation_id: str, message_id: str
    ) -> list[LedgerEntry]:
        """The stored message with this native id in this conversation and its edits, in
        sequence order (none when the ledger never took it). Scans the conversation's events:
        for a message the engine no longer holds in memory, not for every event."""
        ...

    async def conversation_marks(
        self, id_prefix: str, kind: str, *, threads: bool = False
    ) -> list[ConversationMark]:
        """For each conversation, the newest event of `kind` whose id starts with `id_prefix`;
        with `threads`, for each thread of each conversation apart (and its top level)."""
        ...

    async def add_receipt(self, event_id: str, agent: str) -> bool:
        """Record that `agent`'s connection received the event; False if already recorded."""
        ...

    async def receipts(self, event_id: str) -> list[str]:
        """The agents whose connections received the event, by name."""
        ...

    async def receipts_between(self, after_seq: int, upto_seq: int) -> dict[int, list[str]]:
        """`receipts` of every event after `after_seq` up to `upto_seq` in one read (a page of
        the ledger), by sequence number; an event no connection received is left out."""
        ...


class Deliveries(Protocol):
    """What the host decided about each ledger event for each agent, keyed by (event, agent),
    and how far each delivery got: `pending` until the harness acknowledges it, then
    `delivered`, `reminded`, `escalated` or `failed`, with a disposition once the agent ends it.

    A delivery names an event of the same database's `Ledger` (by its sequence number), so the
    two live on one database; reads join them. `record_decisions` may hold rows back until the
    transaction commits, but every read (here) sees them. An attempt count only goes up.
    """

    async def record_decisions(
        self, seq: int, decisions: list[Decision], at: str, *, reserve: bool = False
    ) -> None:
        """Store the decisions made for the event at `seq`, each `pending`, decided `at`.
        With `reserve`, each delivery's first attempt is reserved (its attempt is 1 from the
        start): the host that decided it may send attempt 1 without writing again, and any
        other send, there or after a restart, goes as a higher one."""
        ...

    async def decided_agents(self, event_id: str) -> set[str]:
        """The agents that already have a decision for the event."""
        ...

    async def deliveries(self, event_id: str) -> list[StoredDelivery]:
        """Every agent's delivery of the event, by agent name."""
        ...

    async def deliveries_between(
        self, after_seq: int, upto_seq: int
    ) -> dict[int, list[StoredDelivery]]:
        """`deliveries` of every event after `after_seq` up to `upto_seq` in one read (a page
        of the ledger), by sequence number; an event with no decision is left out."""
        ...

    async def pending(self, agent: str, limit: int = 1000) -> list[StoredDelivery]:
        """The agent's deliveries its harness has not acknowledged, oldest first (by `seq`)."""
        ...

    async def seen_by(
        self, agent: str, *, limit: int = 50, **where: Unpack[SeenWhere]
    ) -> list[tuple[LedgerEntry, StoredDelivery]]:
        """The latest `limit` events delivered to `agent` (narrowed by `where`, a filter left
        out or None being no filter), oldest first, each with the agent's delivery record."""
        ...

    async def overdue(self, decided_before: str) -> list[StoredDelivery]:
        """Acknowledged deliveries owing an answer (`Decision.owes_answer`) with no disposition,
        decided before then."""
        ...

    async def revise_pending(self, seq: int, decision: Decision) -> bool:
        """Replace the policy, reason and deadline of a delivery not yet delivered; False when
        there is none (it went to the harness already, or never existed)."""
        ...

    async def set_status(self, event_id: str, agent: str, status: str) -> None:
        """Move a delivery on (`reminded`, `escalated`) so it is not chased twice."""
        ...

    async def set_disposition(
        self, event_id: str, agent: str, disposition: Disposition, reason: str, at: str
    ) -> bool:
        """Record how a delivery ended; False when there is no such delivery. One superseded
        before its harness had it is withdrawn as well (`store_rows.WITHDRAW_PENDING`)."""
        ...

    async def mark_delivered(self, event_id: str, agent: str, attempt: int) -> None:
        """The harness acknowledged the delivery on this attempt."""
        ...

    async def mark_failed(self, event_id: str, agent: str, reason: str, at: str) -> None:
        """The harness refused the delivery for good: status `failed`, disposition `failed`."""
        ...

    async def note_attempt(self, event_id: str, agent: str, attempt: int) -> None:
        """A delivery attempt is about to be made (so attempts are counted across restarts)."""
        ...


class Claims(Protocol):
    """Who holds an item (an event, a thread) until when.

    `claim` is atomic on its own, inside a transaction or not: two callers racing for one item
    get one holder, and an expired claim is anyone's to take.
    """

    async def claim(self, item: str, agent: str, now: datetime, ttl_ms: int) -> ClaimResult:
        """Atomically take `item` for `agent` unless another agent holds an unexpired claim."""
        ...

    async def claims(self, now: datetime) -> dict[str, tuple[str, datetime]]:
        """Every unexpired claim: item -> (agent, expiry)."""
        ...

    async def hand_over(self, item: str, holder: str, to: str, now: datetime, ttl_ms: int) -> bool:
        """Atomically move `item`'s claim from `holder` to `to` for `ttl_ms` from `now`, whether
        or not it has expired; False, changing nothing, when `holder` no longer has it."""
        ...


class OutboxStore(Protocol):
    """Outbound platform actions, each queued once under its idempotency key, in queue order.

    `put_outbox` is atomic per key (a second put of a key changes nothing); `outbox_mark` to
    `sending` counts the attempt in the same write, so after a crash `outbox_recover` can tell
    which actions may have landed.
    """

    async def put_outbox(self, key: str, agent: str, action: Mapping[str, Any], at: str) -> bool:
        """Queue an outbound action once per idempotency key; False when the key exists.
        Called only by `Engine.queue`, which redacts the action's text first."""
        ...

    async def outbox_due(self, limit: int = 100) -> list[OutboxEntry]:
        """Actions still to send (`pending`, `ambiguous`), oldest first."""
        ...

    async def outbox_take(self, holder: str, limit: int = 100) -> list[OutboxEntry]:
        """Due actions for the process `holder` to send, oldest first, each taken by one
        process only: where several share the database, an action stays its taker's while the
        taker's lease `host:<holder>` lives, and one a dead taker left `sending` comes back
        `ambiguous`. With one process (SQLite) these are simply the due actions."""
        ...

    async def outbox_mark(
        self, key: str, status: str, at: str, result: Mapping[str, Any] | None = None
    ) -> bool:
        """Move an action on; `sending` also counts an attempt, and moves only a row still due
        (`pending` or `ambiguous`). False when no row moved."""
        ...

    async def outbox_recover(self, at: str) -> int:
        """After a restart: an action left `sending` may have landed, so it is `ambiguous`
        (where several processes share the database, only those no live process took)."""
        ...

    async def outbox_get(self, key: str) -> OutboxEntry | None:
        """One action by its idempotency key, with what the platform returned once sent."""
        ...

    async def outbox_has(self, key: str) -> bool:
        """Whether an action is already queued (or sent) under this idempotency key."""
        ...

    async def outbox_newest(self, limit: int) -> list[OutboxEntry]:
        """The `limit` actions put in the outbox last, with their results, oldest first."""
        ...


class AuditLog(Protocol):
    """Records kept for people to read later: what agents did, what was escalated to whom, and
    input that could not be read. Append-only; an escalation is recorded once per
    (reason, conversation, event), atomically.
    """

    async def audit(
        self, agent: str, what: str, outcome: str, detail: Mapping[str, Any], at: str
    ) -> None:
        """Keep a record of something an agent did (a tool call) and how it ended."""
        ...

    async def record_escalation(
        self, agent: str, reason: str, conversation: str, event_id: str, at: str
    ) -> bool:
        """Record an escalation to `agent`; False when the same one is already recorded."""
        ...

    async def quarantine(self, source: str, reason: str, payload: str, at: str) -> None:
        """Keep input that could not be read, with the reason, instead of dropping it; the
        same input again (source, reason and payload) is counted on the record already kept."""
        ...

    async def audit_records(self, limit: int, agent: str | None = None) -> list[AuditRecord]:
        """The newest `limit` audit records (only `agent`'s, when given), oldest first."""
        ...

    async def quarantined(self, limit: int) -> list[QuarantineRecord]:
        """The newest `limit` quarantined inputs, oldest first."""
        ...


class GatewaySessions(Protocol):
    """Where each bot's gateway connection stands, per platform and shard, so a restart can
    resume it. A save is atomic, and the same session's `seq` never goes back."""

    async def save_gateway_session(self, platform: str, session: GatewaySession) -> None:
        """Keep where a bot's gateway session stands; the same session's `seq` never goes back."""
        ...

    async def gateway_sessions(self, platform: str, bot: str) -> list[GatewaySession]:
        """The sessions kept for `bot`'s gateway, one per shard."""
        ...


class Leases(Protocol):
    """Which process holds what (an agent's harness, a shard), until when: several processes on
    one database each hold a lease they renew, and a lease whose holder stopped renewing is
    anyone's once it expires.

    Every call is atomic on its own: two holders racing for one lease get one holder. Expiry is
    decided by `now` when given, else by the database's own clock, so the processes' clocks
    never disagree about it. An expired lease is lost: `renew` refuses it, even if nobody took it.
    """

    async def acquire(
        self, name: str, holder: str, ttl_ms: int, now: datetime | None = None
    ) -> Lease | None:
        """Take `name` for `holder` for `ttl_ms` (or extend it when it is already the holder's);
        None when another holder's lease has not expired."""
        ...

    async def renew(
        self, name: str, holder: str, ttl_ms: int, now: datetime | None = None
    ) -> Lease | None:
        """Extend `holder`'s unexpired lease for `ttl_ms`; None when it is not (or no longer)
        the holder's: it expired, was released or was taken."""
        ...

    async def release(self, name: str, holder: str) -> bool:
        """Give the lease up at once, so another may take it; False when it was not the holder's."""
        ...

    async def holders(self, now: datetime | None = None) -> list[Lease]:
        """Every unexpired lease, by name."""
        ...


class Snapshots(Protocol):
    """The engine's memory saved at a clean stop (`core.memory_snapshot`): at most one is kept,
    and it is read once."""

    async def save_snapshot(self, snapshot: Snapshot) -> None:
        """Keep `snapshot` in place of any kept before."""
        ...

    async def take_snapshot(self) -> Snapshot | None:
        """The snapshot kept, if any; it is kept no longer, whether or not the taker can use it."""
        ...


class Retention(Protocol):
    """Dropping what a workspace's retention has outlived (`core.retention` decides when, and
    `core.store_prune` says what is kept however old it is)."""

    async def prune_batch(self, before: datetime, limit: int, after: int = 0) -> PrunedBatch:
        """Drop, in one transaction, at most `limit` of the oldest ledger records from before
        `before` that may go, of those numbered after `after` (with their receipts and
        decisions), at most `limit` sent or
        failed outbox rows, audit records and quarantined payloads last changed before it, and
        the escalations and claims older than it, and note `before` as how far retention has
        pruned (unless it had pruned further); returns how many rows of each kind went
        (`core.store_prune.PRUNE_STEPS` names them), and where the next batch starts."""
        ...

    async def pruned_before(self) -> datetime | None:
        """How far retention has pruned: the latest `before` a batch was given; None if never."""
        ...


class Store(
    Ledger,
    Deliveries,
    Claims,
    OutboxStore,
    AuditLog,
    GatewaySessions,
    Leases,
    Snapshots,
    Retention,
    Protocol,
):
    """The durable ledger: every part above on one database, opened and closed together, with
    one transaction across them (an event, its receipts, decisions, claims and outbound actions
    commit together)."""

    async def open(self) -> None:
        """Connect, and create what is missing of the schema; an existing database opens as is.
        Raises `StoreError` when the database cannot be opened."""
        ...

    async def close(self) -> None:
        """Disconnect; closing a closed store does nothing."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[None]:
        """Group writes; they commit together when the block ends without an exception, and
        none of them is kept when it raises. A block inside another joins the outer one."""
        ...

    async def durable(self) -> None:
        """Return once what was written so far is committed: at once when no transaction is
        open, else when the open one ends (`StoreError` if it was rolled back). Inside the
        open transaction's own task, at once: it commits only after the task leaves it."""
        ...


async def entry_of(ledger: Ledger, event_id: str) -> LedgerEntry | None:
    """The ledger record of the event with this id, None when it is not stored."""
    seq = await ledger.sequence_of(event_id)
    return await ledger.entry(seq) if seq is not None else None
