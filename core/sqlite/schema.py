"""The ledger's SQLite schema as numbered migrations (`core.migrations` says how they apply).

Migration 1 is the schema every file had before migrations were numbered; its statements are
idempotent, and such a file is recognised by the `schema_version` it keeps in `meta` and
recorded as at that version without running anything. A later change of the schema is a new
migration at the end of `MIGRATIONS`, never an edit of one already released.
"""

from __future__ import annotations

from core.migrations import RECORD_TABLE, Migration

__all__ = ["MIGRATIONS", "RECORD", "RECORDED", "VERSION_BEFORE"]

# The table recording what is applied, how a migration is recorded, and how a file from
# before it is recognised: by the version its `meta` table names.
RECORD = f"""CREATE TABLE IF NOT EXISTS {RECORD_TABLE} (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
)"""
RECORDED = (
    f"INSERT INTO {RECORD_TABLE} (version, name, applied_at) "
    "VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))"
)
VERSION_BEFORE = "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'"

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    ts TEXT NOT NULL,
    kind TEXT NOT NULL,
    by TEXT NOT NULL,
    data TEXT NOT NULL,
    conversation TEXT NOT NULL DEFAULT '',
    thread TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS events_by_conversation ON events (conversation, thread, seq);
CREATE TABLE IF NOT EXISTS receipts (
    event_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    PRIMARY KEY (event_id, agent)
);
CREATE TABLE IF NOT EXISTS deliveries (
    event_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    seq INTEGER NOT NULL,
    directedness TEXT NOT NULL,
    policy TEXT NOT NULL,
    mode TEXT NOT NULL,
    reason TEXT NOT NULL,
    priority TEXT NOT NULL,
    deadline_ms INTEGER,
    claimed_by TEXT,
    continues TEXT,
    supersedes TEXT,
    decided_at TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',  -- pending until the harness acknowledges
    attempt INTEGER NOT NULL DEFAULT 0,
    disposition TEXT,
    disposition_reason TEXT,
    disposed_at TEXT,
    PRIMARY KEY (seq, agent)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS deliveries_pending ON deliveries (agent, seq) WHERE status = 'pending';
CREATE TABLE IF NOT EXISTS claims (
    item TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    claimed_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox (
    n INTEGER PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    agent TEXT NOT NULL,
    action TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',  -- pending, sending, sent, failed, ambiguous
    attempts INTEGER NOT NULL DEFAULT 0,
    result TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS escalations (
    agent TEXT NOT NULL,
    reason TEXT NOT NULL,
    conversation TEXT NOT NULL,
    event_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (reason, conversation, event_id)
);
CREATE TABLE IF NOT EXISTS audit (
    n INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    agent TEXT NOT NULL,
    what TEXT NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS gateway_sessions (
    platform TEXT NOT NULL,
    bot TEXT NOT NULL,
    shard INTEGER NOT NULL,  -- -1 for an unsharded connection
    session_id TEXT NOT NULL,
    resume_url TEXT NOT NULL,
    seq INTEGER NOT NULL,  -- the last dispatch whose event the ledger holds
    updated_at TEXT NOT NULL,
    PRIMARY KEY (platform, bot, shard)
);
CREATE TABLE IF NOT EXISTS quarantine (
    id INTEGER PRIMARY KEY,
    received_at TEXT NOT NULL,
    source TEXT NOT NULL,
    reason TEXT NOT NULL,
    payload TEXT NOT NULL
);
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '1');
"""

# Which process holds what (`core.store.Leases`), its expiry in milliseconds since the epoch.
_LEASES = """
CREATE TABLE IF NOT EXISTS leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_ms INTEGER NOT NULL
);
"""

# What a long-running host reads again and again, indexed so that it costs the rows it finds,
# not the whole table: the outbox's due rows (every drain), the deliveries still owing an
# answer (the follow-up sweep, every few seconds) and each agent's digest items (each digest).
# Each is partial: it holds only the few rows it is for, so writing a delivery or an outbox row
# costs nothing more.
_REREAD = """
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (n) WHERE status IN ('pending', 'ambiguous');
CREATE INDEX IF NOT EXISTS deliveries_open ON deliveries (seq)
    WHERE status = 'delivered' AND policy = 'must_respond' AND disposition IS NULL;
CREATE INDEX IF NOT EXISTS deliveries_digest ON deliveries (agent, seq) WHERE mode = 'digest';
"""

# The engine's memory saved at a clean stop (`core.memory_snapshot`), one row at the most.
_SNAPSHOT = """
CREATE TABLE IF NOT EXISTS memory_snapshot (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,  -- the last ledger record the memory holds
    version TEXT NOT NULL,
    data BLOB NOT NULL
);
"""

# The moment before which retention has dropped what it may (`core.store.Retention`), one row at
# the most.
_PRUNED = """
CREATE TABLE IF NOT EXISTS pruned (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    dropped_before TEXT NOT NULL
);
"""

# A quarantined payload kept once (`AuditLog.quarantine`): the same input again, from the same
# source for the same reason (a platform's retry, a web chat line read again at each start),
# counts on its first row. Rows from before have no digest and are never counted on.
_QUARANTINE_ONCE = """
ALTER TABLE quarantine ADD COLUMN digest TEXT;
ALTER TABLE quarantine ADD COLUMN times INTEGER NOT NULL DEFAULT 1;
ALTER TABLE quarantine ADD COLUMN last_at TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS quarantine_once ON quarantine (digest);
"""

# The deliveries still owing an answer include the responder the host picked for a role or
# room question, which the follow-up sweep chases too (`core.store_rows.OPEN_OBLIGATION`).
_OPEN_OBLIGATIONS = """
DROP INDEX IF EXISTS deliveries_open;
CREATE INDEX deliveries_open ON deliveries (seq)
    WHERE status = 'delivered' AND disposition IS NULL
    AND (policy = 'must_respond' OR (policy = 'may_respond' AND claimed_by = agent));
"""

MIGRATIONS = (
    Migration(1, "the ledger's tables", _TABLES),
    Migration(2, "leases", _LEASES),
    Migration(3, "indexes for what a running host reads again", _REREAD),
    Migration(4, "the memory saved at a clean stop", _SNAPSHOT),
    Migration(5, "how far retention has pruned", _PRUNED),
    Migration(6, "a quarantined payload kept once", _QUARANTINE_ONCE),
    Migration(7, "a picked responder's question is owed too", _OPEN_OBLIGATIONS),
)
