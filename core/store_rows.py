"""What the SQL backends share: the columns they read and how a row becomes a record.

Both `core.sqlite` and `core.postgres` keep the same tables with the same column names and
return JSON columns as text, so a row read from either is turned into a `LedgerEntry` or a
`StoredDelivery` here, once. Only the placeholders (`?` or `%s`) and each database's own
statements differ, and those stay in each backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from core.decision import Decision, Directedness, Disposition, InjectionMode, Policy, Priority
from core.store import GatewaySession, LedgerEntry, OutboxEntry, StoredDelivery

__all__ = [
    "DELIVERY_COLUMNS",
    "EVENT_COLUMNS",
    "OUTBOX_COLUMNS",
    "READ_COLUMNS",
    "SEEN_WHERE",
    "delivery_from_row",
    "dumps",
    "entry_from_row",
    "gateway_from_row",
    "gateway_row",
    "outbox_from_row",
    "prefixed",
]

EVENT_COLUMNS = "seq, id, ts, kind, by, data"
DELIVERY_COLUMNS = (
    "event_id, agent, seq, directedness, policy, mode, reason, priority, deadline_ms, "
    "claimed_by, continues, supersedes"
)
READ_COLUMNS = f"{DELIVERY_COLUMNS}, status, attempt, disposition"
# What is due leaves out `result`, which only a sent action has.
OUTBOX_COLUMNS = "idempotency_key, agent, action, status, attempts, result"
# The condition each of `seen_by`'s filters puts on the events (e) and deliveries (d) joined,
# `{}` standing for the backend's placeholder.
SEEN_WHERE = {
    "conversation": "e.conversation = {}",
    "thread": "e.thread = {}",
    "before_seq": "e.seq < {}",
    "after_seq": "e.seq > {}",
    "mode": "d.mode = {}",
}


def dumps(value: Mapping[str, Any]) -> str:
    """A JSON column's text."""
    return orjson.dumps(value).decode()


def prefixed(table: str, columns: str) -> str:
    """`a, b` as `t.a, t.b`."""
    return ", ".join(f"{table}.{column.strip()}" for column in columns.split(","))


def entry_from_row(row: tuple[Any, ...]) -> LedgerEntry:
    """A ledger record from the `EVENT_COLUMNS` of a row."""
    return LedgerEntry(
        seq=int(row[0]),
        id=str(row[1]),
        ts=str(row[2]),
        kind=str(row[3]),
        by=str(row[4]),
        data=orjson.loads(row[5]),
    )


def delivery_from_row(row: tuple[Any, ...]) -> StoredDelivery:
    """A delivery record from the `READ_COLUMNS` of a row."""
    decision = Decision(
        event_id=str(row[0]),
        agent=str(row[1]),
        directedness=Directedness(row[3]),
        policy=Policy(row[4]),
        mode=InjectionMode(row[5]),
        reason=str(row[6]),
        priority=Priority(row[7]),
        deadline_ms=row[8],
        claimed_by=row[9],
        continues=row[10],
        supersedes=row[11],
    )
    return StoredDelivery(
        decision=decision,
        seq=int(row[2]),
        status=str(row[12]),
        attempt=int(row[13]),
        disposition=Disposition(row[14]) if row[14] else None,
    )


def outbox_from_row(row: tuple[Any, ...]) -> OutboxEntry:
    """An outbound action from the `OUTBOX_COLUMNS` of a row (or the first five of them)."""
    result = orjson.loads(row[5]) if len(row) > 5 and row[5] else None
    return OutboxEntry(row[0], row[1], orjson.loads(row[2]), row[3], int(row[4]), result)


def gateway_row(platform: str, session: GatewaySession) -> tuple[Any, ...]:
    """A gateway session as the values of (platform, bot, shard, session_id, resume_url, seq,
    updated_at)."""
    return (
        platform,
        session.bot,
        session.shard,
        session.session_id,
        session.resume_url,
        session.seq,
        session.updated_at,
    )


def gateway_from_row(row: tuple[Any, ...]) -> GatewaySession:
    """A gateway session from a row of (bot, shard, session_id, resume_url, seq, updated_at)."""
    return GatewaySession(
        str(row[0]), int(row[1]), str(row[2]), str(row[3]), int(row[4]), str(row[5])
    )
