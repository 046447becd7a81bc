"""The statements that drop what a workspace's retention has outlived, for both SQL backends.

Both backends keep the same tables with the same columns, so the statements are written once
here with the backend's placeholder (`?` or `%s`); `core.retention` says what is kept and why.
One batch (`PRUNE_STEPS`, in order) takes at most `limit` ledger records, outbox rows, audit
records and quarantined payloads older than `before`, with what belongs to those records (their
receipts and decisions), and every escalation and expired claim older than `before`.

A table's rows are numbered in the order they were written and their times grow with the
numbers, so the old rows are the ones under a boundary, found by a binary search of a few
indexed reads (`boundary`) instead of reading every row's time: a round with nothing to drop
costs milliseconds on a ledger of a million records, not a scan of it.

A ledger record is old enough when its time (`ts`) is before `before`, and it is kept all the
same while:

- it is the ledger's newest record: SQLite numbers a new record after the highest one there
  is, so deleting it would hand its number out again;
- it is the newest message of its conversation: the catch-up after a restart reads a
  conversation from its newest message in the ledger (`Ledger.conversation_marks`), and one
  without any would not be read at all;
- a decision about it is still open: not yet delivered, or owing an answer (`must_respond`, or
  the responder picked for a role question) delivered and not yet answered, declined or
  escalated (the follow-up sweep's own condition);
- it says who is where (`KEPT_KINDS`): a member joined or left, a thread was made, an agent
  was muted or left a conversation. The host's memory of that is folded from the ledger, so
  dropping them would put a muted agent back into the conversation a year later; they come
  from what people do, not from how much they say, and are few.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, LiteralString

from core.agent_records import LEFT_KIND
from core.codec import LEDGER_KINDS
from core.events import EventKind
from core.mutes import MUTED_KIND
from core.store_records import PrunedBatch
from core.store_rows import OPEN_OBLIGATION

__all__ = [
    "KEPT_KINDS",
    "PRUNED_BEFORE",
    "WHO_IS_WHERE",
    "Execute",
    "PruneStep",
    "Table",
    "boundary",
    "prune_batch",
    "prune_statement",
]

_MESSAGE: Final = LEDGER_KINDS[EventKind.MESSAGE]
WHO_IS_WHERE: Final = frozenset(
    {EventKind.MEMBER_JOINED, EventKind.MEMBER_LEFT, EventKind.THREAD_CREATED}
)
"""The chat events that say who is where, which retention keeps (`KEPT_KINDS`)."""
KEPT_KINDS: Final = (*sorted(LEDGER_KINDS[kind] for kind in WHO_IS_WHERE), MUTED_KIND, LEFT_KIND)
"""The kinds of record retention never drops: what the host knows of who is where."""

# Whether retention may drop the record `events e` (`{p}`: `before`). Cheap tests first; a
# message is kept while no newer one of its conversation exists.
_MAY_GO = (
    "e.ts < {p} AND e.seq < (SELECT max(seq) FROM events) "
    f"AND e.kind NOT IN ({', '.join(repr(kind) for kind in KEPT_KINDS)}) "
    f"AND (e.kind != '{_MESSAGE}' OR e.conversation = '' OR EXISTS (SELECT 1 FROM events n "
    f"WHERE n.conversation = e.conversation AND n.kind = '{_MESSAGE}' AND n.seq > e.seq)) "
    "AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.seq = e.seq AND (d.status = 'pending' "
    f"OR ({OPEN_OBLIGATION})))"
)
# Those after the last batch's and under the boundary (`{p}`s: `after`, `bound`, `before`), and
# those of this batch, up to and including its last (`after`, `upto`, `before`): each a range
# of the ledger's key, which the database reads alone.
_OLD = f"e.seq > {{p}} AND e.seq < {{p}} AND {_MAY_GO}"
_PRUNABLE = f"e.seq > {{p}} AND e.seq <= {{p}} AND {_MAY_GO}"
_EVENTS = ("after", "upto", "before")


@dataclass(frozen=True, slots=True)
class PruneStep:
    """One statement: what it drops (`what`, as `prune_batch` counts it), and the statement
    with `{p}` for the placeholder; `args` says what each placeholder takes: `before`, `limit`,
    `expired` (`before` as the backend keeps a claim's expiry), `bound` (the table's
    `boundary`), `after` (the last batch's last sequence number), `upto` (the highest sequence
    number of this batch's ledger records), or `key` (a binary search's probe)."""

    what: str
    statement: LiteralString
    args: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Table:
    """A table whose rows are numbered by `key` in the order they were written, at `time`."""

    name: LiteralString
    key: LiteralString
    time: LiteralString

    @property
    def ends(self) -> PruneStep:
        """The lowest key and the highest (each its own subquery: an index's end, not a scan)."""
        return PruneStep(
            "ends",
            f"SELECT (SELECT min({self.key}) FROM {self.name}), "
            f"(SELECT max({self.key}) FROM {self.name})",
        )

    @property
    def probe(self) -> PruneStep:
        """The first row at or after a key: its key and time."""
        return PruneStep(
            "probe",
            f"SELECT {self.key}, {self.time} FROM {self.name} WHERE {self.key} >= {{p}} "
            f"ORDER BY {self.key} LIMIT 1",
            ("key",),
        )


EVENTS: Final = Table("events", "seq", "ts")
OUTBOX: Final = Table("outbox", "n", "created_at")
AUDIT: Final = Table("audit", "n", "at")
QUARANTINE: Final = Table("quarantine", "id", "received_at")

UPTO: Final = PruneStep(
    "upto",
    f"SELECT max(seq) FROM (SELECT e.seq FROM events e WHERE {_OLD} ORDER BY e.seq LIMIT {{p}}) b",
    ("after", "bound", "before", "limit"),
)
"""The batch's end: the highest sequence number among the oldest `limit` records retention may
drop (NULL when there is none)."""

# (the table whose boundary a step's `bound` is, the step)
PRUNE_STEPS: Final = (
    (
        EVENTS,
        PruneStep(
            "receipts",
            f"DELETE FROM receipts WHERE event_id IN (SELECT e.id FROM events e WHERE {_PRUNABLE})",
            _EVENTS,
        ),
    ),
    (
        EVENTS,
        PruneStep(
            "decisions",
            f"DELETE FROM deliveries WHERE seq IN (SELECT e.seq FROM events e WHERE {_PRUNABLE})",
            _EVENTS,
        ),
    ),
    (
        EVENTS,
        PruneStep(
            "events",
            f"DELETE FROM events WHERE seq IN (SELECT e.seq FROM events e WHERE {_PRUNABLE})",
            _EVENTS,
        ),
    ),
    (
        OUTBOX,
        PruneStep(
            "outbox",
            "DELETE FROM outbox WHERE n IN (SELECT n FROM outbox WHERE n < {p} "
            "AND status IN ('sent', 'failed') AND updated_at < {p} ORDER BY n LIMIT {p})",
            ("bound", "before", "limit"),
        ),
    ),
    (
        AUDIT,
        PruneStep(
            "audit",
            "DELETE FROM audit WHERE n IN "
            "(SELECT n FROM audit WHERE n < {p} AND at < {p} ORDER BY n LIMIT {p})",
            ("bound", "before", "limit"),
        ),
    ),
    (
        QUARANTINE,
        PruneStep(
            "quarantine",
            "DELETE FROM quarantine WHERE id IN (SELECT id FROM quarantine "
            "WHERE id < {p} AND received_at < {p} ORDER BY id LIMIT {p})",
            ("bound", "before", "limit"),
        ),
    ),
    (None, PruneStep("escalations", "DELETE FROM escalations WHERE created_at < {p}", ("before",))),
    (None, PruneStep("claims", "DELETE FROM claims WHERE expires_at < {p}", ("expired",))),
)
"""A batch's statements, in the order they run: a record's receipts and decisions go before
the record, while the condition that picks it can still be read."""

MARK: Final = PruneStep(
    "mark",
    "INSERT INTO pruned (id, dropped_before) VALUES (1, {p}) ON CONFLICT (id) DO UPDATE "
    "SET dropped_before = excluded.dropped_before "
    "WHERE pruned.dropped_before < excluded.dropped_before",
    ("before",),
)
"""The batch's last statement: how far retention has pruned, which only moves forward."""

PRUNED_BEFORE: Final = "SELECT dropped_before FROM pruned WHERE id = 1"
"""How far retention has pruned (`core.store.Retention.pruned_before`); no row: never."""

Execute = Callable[[PruneStep, tuple[Any, ...]], Awaitable[tuple[int, tuple[Any, ...] | None]]]
"""How a backend runs one statement with its arguments, inside the batch's transaction: the
rows it changed, and its first row (None when it returns none)."""


async def prune_batch(
    execute: Execute, before: str, expired: object, limit: int, after: int
) -> PrunedBatch:
    """One batch (`core.store.Retention.prune_batch`), run by `execute` in the backend's open
    transaction: `before` as the tables keep times, `expired` as the claims keep theirs."""
    values: dict[str, object] = {
        "before": before,
        "expired": expired,
        "limit": limit,
        "after": after,
    }
    bounds = {
        table: await boundary(execute, table, before)
        for table in (EVENTS, OUTBOX, AUDIT, QUARANTINE)
    }
    values["bound"] = bounds[EVENTS]
    _, row = await execute(UPTO, tuple(values[name] for name in UPTO.args))
    values["upto"] = upto = after if row is None or row[0] is None else int(row[0])
    dropped: dict[str, int] = {}
    for table, step in PRUNE_STEPS:
        if table is not None:
            values["bound"] = bounds[table]
        dropped[step.what], _ = await execute(step, tuple(values[name] for name in step.args))
    await execute(MARK, (before,))
    return PrunedBatch(dropped, upto)


async def boundary(execute: Execute, table: Table, before: str) -> int:
    """The smallest key of `table` whose row's time is not before `before` (one past the largest
    key when every row is older; 0 for an empty table): a binary search over the keys, each step
    one indexed read. Times that do not quite grow with the keys (two hosts' clocks) only leave
    a few old rows for a later round."""
    _, ends = await execute(table.ends, ())
    if ends is None or ends[0] is None:
        return 0
    low, high = int(ends[0]), int(ends[1]) + 1  # keys under `low` are old; from `high`, not
    while low < high:
        middle = (low + high) // 2
        _, row = await execute(table.probe, (middle,))
        if row is None or row[1] >= before:
            high = middle
        else:
            low = int(row[0]) + 1
    return low


def prune_statement(step: PruneStep, placeholder: LiteralString) -> LiteralString:
    """`step`'s statement with the backend's `placeholder`."""
    return step.statement.replace("{p}", placeholder)
