"""The shared ledger: PostgreSQL through psycopg 3 (async), the same guarantees as SQLite's.

Durability: a write is durable once the transaction that holds it has committed, as the server
is configured to keep commits (`synchronous_commit`, on by default, survives a crash of the
server and of the machine). docs/deploy.md says how to point c2a at a server, why psycopg 3,
and how migrations run.

Each responsibility lives in its own module of `core.postgres` (connection and schema, ledger,
deliveries, claims, outbox, audit, gateway sessions, leases, the memory's snapshot, retention); this
class only puts them together. It is imported only when a store URL names PostgreSQL
(`core.store_choice`), so psycopg is needed only then.
"""

from __future__ import annotations

from core.postgres.audit import PostgresAuditLog
from core.postgres.claims import PostgresClaims
from core.postgres.deliveries import PostgresDeliveries
from core.postgres.gateway import PostgresGatewaySessions
from core.postgres.leases import PostgresLeases
from core.postgres.ledger import PostgresLedger
from core.postgres.outbox import PostgresOutbox
from core.postgres.retention import PostgresRetention
from core.postgres.snapshots import PostgresSnapshots

__all__ = ["PostgresStore"]


class PostgresStore(
    PostgresLedger,
    PostgresDeliveries,
    PostgresClaims,
    PostgresOutbox,
    PostgresAuditLog,
    PostgresGatewaySessions,
    PostgresLeases,
    PostgresSnapshots,
    PostgresRetention,
):
    """The `Store` on PostgreSQL. `url` is a libpq connection string; `schema`, when given,
    is the PostgreSQL schema that holds this ledger's tables (made if missing)."""
