"""What the SQL backends share: the columns they read and how a row becomes a record.

Both `core.sqlite` and `core.postgres` keep the same tables with the same column names and
return JSON columns as text, so a row read from either is turned into a `LedgerEntry` or a
`StoredDelivery` here, once, and a decision becomes a row here. `seen_by`'s query differs only
in its placeholder (`?` or `%s`) and is written here too; each database's other statements stay
in its backend.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import Enum
from typing import Any, TypeVar

import orjson

from core.codec import LEDGER_KINDS
from core.decision import Decision, Directedness, Disposition, InjectionMode, Policy, Priority
from core.events import EventKind
from core.store import GatewaySession, LedgerEntry, OutboxEntry, StoredDelivery

__all__ = [
    "DELIVERY_COLUMNS",
    "EVENT_COLUMNS",
    "FILLED_COLUMNS",
    "OPEN_OBLIGATION",
    "OUTBOX_COLUMNS",
    "QUARANTINED",
    "QUARANTINE_AGAIN",
    "READ_COLUMNS",
    "VERSION_KINDS",
    "decision_values",
    "deliveries_between",
    "deliveries_by_seq",
    "delivery_from_row",
    "delivery_insert",
    "dumps",
    "entry_from_row",
    "gateway_from_row",
    "gateway_row",
    "outbox_from_row",
    "prefixed",
    "receipts_between",
    "receipts_by_seq",
    "seen_from_rows",
    "seen_statement",
]

E = TypeVar("E", bound=Enum)

EVENT_COLUMNS = "seq, id, ts, kind, by, data"
# The kinds of a message's versions: the message, then its edits (`Ledger.message_events`).
VERSION_KINDS = (LEDGER_KINDS[EventKind.MESSAGE], LEDGER_KINDS[EventKind.EDIT])
# The delivery columns a decision always fills, then all of them (`decision_values`).
FILLED_COLUMNS = "event_id, agent, seq, directedness, policy, mode, reason, priority"
DELIVERY_COLUMNS = f"{FILLED_COLUMNS}, deadline_ms, claimed_by, continues, supersedes"
READ_COLUMNS = f"{DELIVERY_COLUMNS}, status, attempt, disposition"
# A delivery its agent owes an answer on and has not answered: acknowledged by its harness, no
# disposition, and `must_respond`, or the responder the host picked for a role or room question
# (`Decision.owes_answer`). Written as the partial index `deliveries_open` is, so both
# databases read that index for it.
OPEN_OBLIGATION = (
    "status = 'delivered' AND disposition IS NULL "
    "AND (policy = 'must_respond' OR (policy = 'may_respond' AND claimed_by = agent))"
)
# A disposition that supersedes a delivery its harness has not had yet also withdraws it (status
# `withdrawn`), so it is never sent: the words are gone, or another agent now holds the question
# (spec 000: "If a message is deleted before response, cancel the pending event").
WITHDRAW_PENDING = ", status = CASE WHEN status = 'pending' THEN 'withdrawn' ELSE status END"
# An outbound action still to be attempted (or looked for): the only rows an attempt may take.
DUE = "status IN ('pending', 'ambiguous')"
# What is due leaves out `result`, which only a sent action has.
OUTBOX_COLUMNS = "idempotency_key, agent, action, status, attempts, result"
# A quarantine record's columns, and what inserting an input already kept does instead.
QUARANTINED = "received_at, source, reason, times, last_at"
QUARANTINE_AGAIN = (
    "ON CONFLICT (digest) DO UPDATE "
    "SET times = quarantine.times + 1, last_at = excluded.received_at"
)
# The condition each of `seen_by`'s filters puts on the events (e) and deliveries (d) joined,
# `{}` standing for the backend's placeholder.
_SEEN_WHERE = {
    "conversation": "e.conversation = {}",
    # A conversation's own lines are those of no thread, or of the thread that is the
    # conversation (a thread with a channel of its own): `thread` "" reads them.
    "thread": "(e.thread = {} OR e.thread = e.conversation)",
    "before_seq": "e.seq < {}",
    "after_seq": "e.seq > {}",
    "mode": "d.mode = {}",
}


def dumps(value: Mapping[str, Any]) -> str:
    """A JSON column's text, each NUL character in it as U+FFFD: PostgreSQL's JSON cannot
    turn a `\\u0000` into text, so one such row would break every query that reads a field
    of its events (and both backends keep the same)."""
    text = orjson.dumps(value).decode()
    return _NUL_ESCAPE.sub(r"\1\\ufffd", text) if _NUL in text else text


_NUL = "\\u0000"
# The escape itself, not a `\\` escape followed by the text `u0000`: an even run of backslashes
# before it.
_NUL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def prefixed(table: str, columns: str) -> str:
    """`a, b` as `t.a, t.b`."""
    return ", ".join(f"{table}.{column.strip()}" for column in columns.split(","))


def decision_values(seq: int, d: Decision) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """A decision's `DELIVERY_COLUMNS` values: the `FILLED_COLUMNS`, then the four most
    decisions leave NULL (deadline, claim, continuation, edit)."""
    # (`str()` of a StrEnum member is its value, read several times faster than `.value`.)
    filled = (
        d.event_id,
        d.agent,
        seq,
        str(d.directedness),
        str(d.policy),
        str(d.mode),
        d.reason,
        str(d.priority),
    )
    return filled, (d.deadline_ms, d.claimed_by, d.continues, d.supersedes)


def delivery_insert(placeholder: str, *, filled_only: bool = False) -> str:
    """The INSERT of one delivery: its `DELIVERY_COLUMNS` (only the `FILLED_COLUMNS` with
    `filled_only`), `decided_at` and `attempt` (0, or 1 when reserved: `record_decisions`),
    each value a `placeholder` (`?` or `%s`)."""
    columns = FILLED_COLUMNS if filled_only else DELIVERY_COLUMNS
    values = ", ".join([placeholder] * (columns.count(",") + 3))
    return f"INSERT INTO deliveries ({columns}, decided_at, attempt) VALUES ({values})"


def receipts_between(placeholder: str) -> str:
    """`Ledger.receipts_between`'s query (`placeholder` is the backend's `?` or `%s`): the
    receipts of a range of events, joined by the events' ids, in sequence and agent order."""
    return (
        "SELECT e.seq, r.agent FROM events e JOIN receipts r ON r.event_id = e.id "
        f"WHERE e.seq > {placeholder} AND e.seq <= {placeholder} ORDER BY e.seq, r.agent"
    )


def deliveries_between(placeholder: str) -> str:
    """`Deliveries.deliveries_between`'s query: a range of events' deliveries, in sequence and
    agent order (the table's primary key)."""
    return (
        f"SELECT {READ_COLUMNS} FROM deliveries "
        f"WHERE seq > {placeholder} AND seq <= {placeholder} ORDER BY seq, agent"
    )


def receipts_by_seq(rows: Iterable[tuple[Any, ...]]) -> dict[int, list[str]]:
    """`receipts_between`'s answer from its query's rows: each event's agents, in order."""
    found: dict[int, list[str]] = {}
    for seq, agent in rows:
        found.setdefault(int(seq), []).append(str(agent))
    return found


def deliveries_by_seq(rows: Iterable[tuple[Any, ...]]) -> dict[int, list[StoredDelivery]]:
    """`deliveries_between`'s answer from its query's rows: each event's deliveries, in order."""
    found: dict[int, list[StoredDelivery]] = {}
    for row in rows:
        delivery = delivery_from_row(row)
        found.setdefault(delivery.seq, []).append(delivery)
    return found


def seen_statement(
    placeholder: str, agent: str, limit: int, where: Mapping[str, object]
) -> tuple[str, tuple[Any, ...]]:
    """`seen_by`'s query and its arguments: the latest `limit` deliveries to `agent` joined with
    their events, newest first, narrowed by each filter of `where` that is not None.
    `placeholder` is the backend's (`?` or `%s`)."""
    used = {name: value for name, value in where.items() if value is not None}
    conditions = " AND ".join(
        [f"d.agent = {placeholder}", *(_SEEN_WHERE[name].format(placeholder) for name in used)]
    )
    query = (
        f"SELECT {prefixed('e', EVENT_COLUMNS)}, {prefixed('d', READ_COLUMNS)} "
        "FROM deliveries d JOIN events e ON e.seq = d.seq "
        f"WHERE {conditions} ORDER BY e.seq DESC LIMIT {placeholder}"
    )
    return query, (agent, *used.values(), limit)


def seen_from_rows(rows: Sequence[tuple[Any, ...]]) -> list[tuple[LedgerEntry, StoredDelivery]]:
    """`seen_by`'s answer from the rows of `seen_statement`'s query: oldest first."""
    return [(entry_from_row(row[:6]), delivery_from_row(row[6:])) for row in reversed(rows)]


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


def _by_value(kind: type[E]) -> Callable[[Any], E]:
    """`kind(value)` by a lookup in a dict of its members: calling the enum class goes through
    its metaclass, five times a delivery row, a tenth of the time a start spends reading them.
    A value that is no member's is still `kind`'s to take or refuse."""
    members = {member.value: member for member in kind}

    def member(value: Any) -> E:
        found = members.get(value)
        return kind(value) if found is None else found

    return member


_directedness = _by_value(Directedness)
_policy = _by_value(Policy)
_mode = _by_value(InjectionMode)
_priority = _by_value(Priority)
_disposition = _by_value(Disposition)


def delivery_from_row(row: tuple[Any, ...]) -> StoredDelivery:
    """A delivery record from the `READ_COLUMNS` of a row."""
    decision = Decision(
        event_id=str(row[0]),
        agent=str(row[1]),
        directedness=_directedness(row[3]),
        policy=_policy(row[4]),
        mode=_mode(row[5]),
        reason=str(row[6]),
        priority=_priority(row[7]),
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
        disposition=_disposition(row[14]) if row[14] else None,
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
