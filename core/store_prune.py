"""The statements that drop what a workspace's retention has outlived, for both SQL backends.

Both backends keep the same tables with the same columns, so the statements are written once
here with the backend's placeholder (`?` or `%s`); `core.retention` says what is kept and why.
One batch (`PRUNE_STEPS`, in order) takes at most `limit` ledger records, outbox rows, audit
records and quarantined payloads older than `before`, with what belongs to those records (their
receipts and decisions), and every escalation and expired claim older than `before`.

A ledger record is old enough when its time (`ts`) is before `before`, and it is kept all the
same while:

- it is the ledger's newest record: SQLite numbers a new record after the highest one there
  is, so deleting it would hand its number out again;
- it is the newest message of its conversation: the catch-up after a restart reads a
  conversation from its newest message in the ledger (`Ledger.conversation_marks`), and one
  without any would not be read at all;
- a decision about it is still open: not yet delivered, or a `must_respond` delivered and
  not yet answered, declined or escalated (the follow-up sweep's own condition);
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

__all__ = [
    "KEPT_KINDS",
    "MARK",
    "PRUNED_BEFORE",
    "PRUNE_STEPS",
    "UPTO",
    "WHO_IS_WHERE",
    "Execute",
    "PruneStep",
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

# The records of `events e` retention may drop (`{p}`: `before`).
_OLD = (
    "e.ts < {p} AND e.seq < (SELECT max(seq) FROM events) "
    f"AND e.kind NOT IN ({', '.join(repr(kind) for kind in KEPT_KINDS)}) "
    "AND e.seq NOT IN (SELECT max(seq) FROM events "
    f"WHERE kind = '{_MESSAGE}' AND conversation != '' GROUP BY conversation) "
    "AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.seq = e.seq AND (d.status = 'pending' "
    "OR (d.status = 'delivered' AND d.policy = 'must_respond' AND d.disposition IS NULL)))"
)
# Those of one batch: up to and including its last (`{p}`s: `before`, then `upto`).
_PRUNABLE = f"{_OLD} AND e.seq <= {{p}}"


@dataclass(frozen=True, slots=True)
class PruneStep:
    """One statement of a batch: what it drops (`what`, as `core.retention.Pruned` names it),
    and the statement with `{p}` for the placeholder; `args` says what each placeholder takes:
    `before`, `limit`, `upto` (the highest sequence number of the batch's ledger records), or
    `expired` (`before` as the backend keeps a claim's expiry)."""

    what: str
    statement: LiteralString
    args: tuple[str, ...]


PRUNE_STEPS: Final = (
    PruneStep(
        "receipts",
        f"DELETE FROM receipts WHERE event_id IN (SELECT e.id FROM events e WHERE {_PRUNABLE})",
        ("before", "upto"),
    ),
    PruneStep(
        "decisions",
        f"DELETE FROM deliveries WHERE seq IN (SELECT e.seq FROM events e WHERE {_PRUNABLE})",
        ("before", "upto"),
    ),
    PruneStep(
        "events",
        f"DELETE FROM events WHERE seq IN (SELECT e.seq FROM events e WHERE {_PRUNABLE})",
        ("before", "upto"),
    ),
    PruneStep(
        "outbox",
        "DELETE FROM outbox WHERE n IN (SELECT n FROM outbox WHERE status IN ('sent', 'failed') "
        "AND updated_at < {p} ORDER BY n LIMIT {p})",
        ("before", "limit"),
    ),
    PruneStep(
        "audit",
        "DELETE FROM audit WHERE n IN (SELECT n FROM audit WHERE at < {p} ORDER BY n LIMIT {p})",
        ("before", "limit"),
    ),
    PruneStep(
        "quarantine",
        "DELETE FROM quarantine WHERE id IN "
        "(SELECT id FROM quarantine WHERE received_at < {p} ORDER BY id LIMIT {p})",
        ("before", "limit"),
    ),
    PruneStep("escalations", "DELETE FROM escalations WHERE created_at < {p}", ("before",)),
    PruneStep("claims", "DELETE FROM claims WHERE expires_at < {p}", ("expired",)),
)
"""A batch's statements, in the order they run: a record's receipts and decisions go before
the record, while the condition that picks it can still be read."""

UPTO: Final = PruneStep(
    "upto",
    f"SELECT max(seq) FROM (SELECT e.seq FROM events e WHERE {_OLD} ORDER BY e.seq LIMIT {{p}}) b",
    ("before", "limit"),
)
"""The batch's end: the highest sequence number among the oldest `limit` records retention may
drop (NULL when there is none)."""


Execute = Callable[[PruneStep, tuple[Any, ...]], Awaitable[tuple[int, Any]]]
"""How a backend runs one step with its arguments, inside the batch's transaction: the rows it
changed, and the first column of its first row (None when it returns none)."""


async def prune_batch(execute: Execute, before: str, expired: object, limit: int) -> dict[str, int]:
    """One batch (`core.store.Retention.prune_batch`), run by `execute` in the backend's open
    transaction: `before` as the tables keep times, `expired` as the claims keep theirs."""
    values: dict[str, object] = {"before": before, "expired": expired, "limit": limit}
    _, upto = await execute(UPTO, tuple(values[name] for name in UPTO.args))
    values["upto"] = -1 if upto is None else int(upto)
    dropped: dict[str, int] = {}
    for step in PRUNE_STEPS:
        dropped[step.what], _ = await execute(step, tuple(values[name] for name in step.args))
    await execute(MARK, (before,))
    return dropped


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


def prune_statement(step: PruneStep, placeholder: LiteralString) -> LiteralString:
    """`step`'s statement with the backend's `placeholder`."""
    return step.statement.replace("{p}", placeholder)
