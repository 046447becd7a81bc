"""The ledger's PostgreSQL schema as numbered migrations (`core.migrations` says how they
apply).

Migration 1 is the same tables as SQLite's migration 1 with PostgreSQL's types: identity
columns for `seq` and the queue orders, `json` for what SQLite keeps as JSON text (`json`, not
`jsonb`, keeps an event's keys in the order they were written), and `timestamptz` for a claim's
times, so `claim` decides expiry in SQL. The outbox rows a host may take have an index of their
own (since migration 3), for `SELECT ... FOR UPDATE SKIP LOCKED` when several hosts drain it.
Text times (`ts`, `at`) stay RFC 3339 text, compared as SQLite compares them.
"""

from __future__ import annotations

from core.migrations import RECORD_TABLE, Migration

__all__ = ["LOCK", "MIGRATIONS", "RECORD", "RECORDED"]

# The advisory lock a host holds while it migrates, so two hosts starting on one database
# migrate it once (a fixed number: "c2a" in ASCII).
LOCK = 0x633261
RECORD = f"""CREATE TABLE IF NOT EXISTS {RECORD_TABLE} (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""
RECORDED = f"INSERT INTO {RECORD_TABLE} (version, name) VALUES (%s, %s)"

_TABLES = """
CREATE TABLE events (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL UNIQUE,
    ts text NOT NULL,
    kind text NOT NULL,
    by text NOT NULL,
    data json NOT NULL,
    conversation text NOT NULL DEFAULT '',
    thread text NOT NULL DEFAULT ''
);
CREATE INDEX events_by_conversation ON events (conversation, thread, seq);
CREATE TABLE receipts (
    event_id text NOT NULL,
    agent text NOT NULL,
    PRIMARY KEY (event_id, agent)
);
CREATE TABLE deliveries (
    event_id text NOT NULL,
    agent text NOT NULL,
    seq bigint NOT NULL,
    directedness text NOT NULL,
    policy text NOT NULL,
    mode text NOT NULL,
    reason text NOT NULL,
    priority text NOT NULL,
    deadline_ms bigint,
    claimed_by text,
    continues text,
    supersedes text,
    decided_at text NOT NULL,
    status text NOT NULL DEFAULT 'pending',  -- pending until the harness acknowledges
    attempt integer NOT NULL DEFAULT 0,
    disposition text,
    disposition_reason text,
    disposed_at text,
    PRIMARY KEY (seq, agent)
);
CREATE INDEX deliveries_pending ON deliveries (agent, seq) WHERE status = 'pending';
CREATE TABLE claims (
    item text PRIMARY KEY,
    agent text NOT NULL,
    claimed_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE TABLE outbox (
    n bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    idempotency_key text NOT NULL UNIQUE,
    agent text NOT NULL,
    action json NOT NULL,
    status text NOT NULL DEFAULT 'pending',  -- pending, sending, sent, failed, ambiguous
    attempts integer NOT NULL DEFAULT 0,
    result json,
    created_at text NOT NULL,
    updated_at text NOT NULL
);
CREATE INDEX outbox_due ON outbox (n) WHERE status IN ('pending', 'ambiguous');
CREATE TABLE escalations (
    agent text NOT NULL,
    reason text NOT NULL,
    conversation text NOT NULL,
    event_id text NOT NULL,
    created_at text NOT NULL,
    PRIMARY KEY (reason, conversation, event_id)
);
CREATE TABLE audit (
    n bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at text NOT NULL,
    agent text NOT NULL,
    what text NOT NULL,
    outcome text NOT NULL,
    detail json NOT NULL
);
CREATE TABLE gateway_sessions (
    platform text NOT NULL,
    bot text NOT NULL,
    shard integer NOT NULL,  -- -1 for an unsharded connection
    session_id text NOT NULL,
    resume_url text NOT NULL,
    seq bigint NOT NULL,  -- the last dispatch whose event the ledger holds
    updated_at text NOT NULL,
    PRIMARY KEY (platform, bot, shard)
);
CREATE TABLE quarantine (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    received_at text NOT NULL,
    source text NOT NULL,
    reason text NOT NULL,
    payload text NOT NULL
);
"""

# Which process holds what (`core.store.Leases`), and which process is sending an outbox row
# (`taken_by`, a host's holder name: the row is its own while its `host:` lease lives).
_LEASES = """
CREATE TABLE leases (
    name text PRIMARY KEY,
    holder text NOT NULL,
    expires_at timestamptz NOT NULL
);
ALTER TABLE outbox ADD COLUMN taken_by text;
"""

# What a long-running host reads again and again, indexed so that it costs the rows it finds,
# not the whole table: the outbox rows a host may take (each drain: `sending` ones too, whose
# taker may have died, which the first index left out, so taking read the whole outbox), the
# deliveries still owing an answer (the follow-up sweep, every few seconds), each agent's
# digest items, and the claims still live (read before each event is decided, where several
# hosts share the ledger; expired claims stay in the table). The first three are partial:
# they hold only the few rows they are for.
_REREAD = """
DROP INDEX outbox_due;
CREATE INDEX outbox_open ON outbox (n) WHERE status IN ('pending', 'ambiguous', 'sending');
CREATE INDEX deliveries_open ON deliveries (seq)
    WHERE status = 'delivered' AND policy = 'must_respond' AND disposition IS NULL;
CREATE INDEX deliveries_digest ON deliveries (agent, seq) WHERE mode = 'digest';
CREATE INDEX claims_live ON claims (expires_at);
"""

# The engine's memory saved at a clean stop (`core.memory_snapshot`), one row at the most.
_SNAPSHOT = """
CREATE TABLE memory_snapshot (
    id integer PRIMARY KEY CHECK (id = 1),
    seq bigint NOT NULL,  -- the last ledger record the memory holds
    version text NOT NULL,
    data bytea NOT NULL
);
"""

# The moment before which retention has dropped what it may (`core.store.Retention`), one row at
# the most.
_PRUNED = """
CREATE TABLE pruned (
    id integer PRIMARY KEY CHECK (id = 1),
    dropped_before text NOT NULL
);
"""

# A quarantined payload kept once (`AuditLog.quarantine`): the same input again, from the same
# source for the same reason (a platform's retry, a web chat line read again at each start),
# counts on its first row. Rows from before have no digest and are never counted on.
_QUARANTINE_ONCE = """
ALTER TABLE quarantine ADD COLUMN digest text, ADD COLUMN times integer NOT NULL DEFAULT 1,
    ADD COLUMN last_at text;
CREATE UNIQUE INDEX quarantine_once ON quarantine (digest);
"""

# The deliveries still owing an answer include the responder the host picked for a role or
# room question, which the follow-up sweep chases too (`core.store_rows.OPEN_OBLIGATION`).
_OPEN_OBLIGATIONS = """
DROP INDEX deliveries_open;
CREATE INDEX deliveries_open ON deliveries (seq)
    WHERE status = 'delivered' AND disposition IS NULL
    AND (policy = 'must_respond' OR (policy = 'may_respond' AND claimed_by = agent));
"""

MIGRATIONS = (
    Migration(1, "the ledger's tables", _TABLES),
    Migration(2, "leases, and who takes an outbox row", _LEASES),
    Migration(3, "indexes for what a running host reads again", _REREAD),
    Migration(4, "the memory saved at a clean stop", _SNAPSHOT),
    Migration(5, "how far retention has pruned", _PRUNED),
    Migration(6, "a quarantined payload kept once", _QUARANTINE_ONCE),
    Migration(7, "a picked responder's question is owed too", _OPEN_OBLIGATIONS),
)
