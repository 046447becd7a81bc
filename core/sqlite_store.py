"""The embedded ledger: SQLite in WAL mode, one writer, portable SQL.

Durability (docs/ledger.md says the same): a write is durable once the transaction that holds
it has committed. With `synchronous="normal"` (the default) a committed transaction survives
the process being killed at any point (it is in the WAL file); the last transactions may be
lost if the whole machine loses power. With `synchronous="full"` every commit is also flushed
to the disk before it returns, and survives power loss. `":memory:"` is never durable.

Each responsibility lives in its own module of `core.sqlite` (schema and connection, ledger,
deliveries, claims, outbox, audit, gateway sessions, leases, the memory's snapshot,
retention); this class only puts them together.
"""

from __future__ import annotations

from core.sqlite.audit import SQLiteAuditLog
from core.sqlite.claims import SQLiteClaims
from core.sqlite.deliveries import SQLiteDeliveries
from core.sqlite.gateway import SQLiteGatewaySessions
from core.sqlite.leases import SQLiteLeases
from core.sqlite.ledger import SQLiteLedger
from core.sqlite.outbox import SQLiteOutbox
from core.sqlite.retention import SQLiteRetention
from core.sqlite.snapshots import SQLiteSnapshots

__all__ = ["SQLiteStore"]


class SQLiteStore(
    SQLiteLedger,
    SQLiteDeliveries,
    SQLiteClaims,
    SQLiteOutbox,
    SQLiteAuditLog,
    SQLiteGatewaySessions,
    SQLiteLeases,
    SQLiteSnapshots,
    SQLiteRetention,
):
    """The `Store` on SQLite. `path` is a file, or `":memory:"` for a throwaway ledger;
    `synchronous` is `"normal"` or `"full"` (see above)."""
