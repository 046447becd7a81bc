"""The embedded ledger: SQLite in WAL mode, one writer, portable SQL.

Durability (docs/ledger.md says the same): a write is durable once the transaction that holds
it has committed. With `synchronous="normal"` (the default) a committed transaction survives
the process being killed at any point (it is in the WAL file); the last transactions may be
lost if the whole machine loses power. With `synchronous="full"` every commit is also flushed
to the disk before it returns, and survives power loss. `":memory:"` is never durable.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, Literal

import orjson

from core.clock import format_time, parse_time
from core.decision import Decision, Directedness, Disposition, InjectionMode, Policy, Priority
from core.errors import StoreError
from core.store import (
    ClaimResult,
    ConversationMark,
    GatewaySession,
    LedgerEntry,
    OutboxEntry,
    StoredDelivery,
)

__all__ = ["SQLiteStore"]

SCHEMA_VERSION = 1

SCHEMA = """
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
"""

# Deliveries are keyed by the event's ledger seq (an integer key keeps inserts cheap); a
# lookup by event id goes through the events table's unique index.
_SEQ_OF = "(SELECT seq FROM events WHERE id = ?)"

_DELIVERY_COLUMNS = (
    "event_id, agent, seq, directedness, policy, mode, reason, priority, deadline_ms, "
    "claimed_by, continues, supersedes"
)
# Most decisions have no deadline, claim, continuation or edit: their rows leave those four
# columns to default to NULL, since binding a None costs sqlite3 an adapter lookup per value.
_INSERT_PLAIN = (
    "INSERT INTO deliveries (event_id, agent, seq, directedness, policy, mode, reason, priority, "
    "decided_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_NONE_SET = (None, None, None, None)
_INSERT_FULL = (
    f"INSERT INTO deliveries ({_DELIVERY_COLUMNS}, decided_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class SQLiteStore:
    """The `Store` on SQLite. `path` is a file, or `":memory:"` for a throwaway ledger."""

    def __init__(
        self, path: str = ":memory:", synchronous: Literal["normal", "full"] = "normal"
    ) -> None:
        self.path = path
        self.synchronous = synchronous
        self._db: sqlite3.Connection | None = None
        self._depth = 0
        self._unwritten: list[tuple[Any, ...]] = []  # rows for _INSERT_PLAIN
        self._unwritten_full: list[tuple[Any, ...]] = []  # rows for _INSERT_FULL

    # ---- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> None:
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
            db.execute("PRAGMA foreign_keys=ON")
            db.executescript(SCHEMA)
            db.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the ledger at {self.path}: {exc}") from None
        self._db = db

    async def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError("the ledger is not open")
        return self._db

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """One transaction; nested blocks join the outer one."""
        db = self.db
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        db.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._depth = 0
            self._unwritten.clear()
            self._unwritten_full.clear()
            db.execute("ROLLBACK")
            raise
        self._depth = 0
        try:
            self._flush()
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            db.execute("ROLLBACK")
            raise StoreError(f"cannot commit to the ledger: {exc}") from None

    # ---- events ------------------------------------------------------------------------------

    async def append(
        self, event_id: str, kind: str, by: str, data: Mapping[str, Any], ts: str
    ) -> int | None:
        # seq is the rowid: SQLite gives max + 1, and the ledger never deletes a row.
        conversation = data.get("conversation") or {}
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO events (id, ts, kind, by, data, conversation, thread) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                event_id,
                ts,
                kind,
                by,
                _dumps(data),
                conversation.get("id", ""),
                conversation.get("thread_id") or "",
            ),
        )
        if cursor.rowcount == 0:
            return None
        return cursor.lastrowid

    async def sequence_of(self, event_id: str) -> int | None:
        row = self.db.execute("SELECT seq FROM events WHERE id = ?", (event_id,)).fetchone()
        return None if row is None else int(row[0])

    async def add_receipt(self, event_id: str, agent: str) -> bool:
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO receipts (event_id, agent) VALUES (?, ?)", (event_id, agent)
        )
        return cursor.rowcount == 1

    async def receipts(self, event_id: str) -> list[str]:
        rows = self.db.execute(
            "SELECT agent FROM receipts WHERE event_id = ? ORDER BY agent", (event_id,)
        )
        return [str(row[0]) for row in rows]

    async def fill_text(self, event_id: str, text: str) -> None:
        row = self.db.execute("SELECT data FROM events WHERE id = ?", (event_id,)).fetchone()
        if row is None:
            return
        data = orjson.loads(row[0])
        if not data.get("text") and not data.get("deleted"):
            data["text"] = text
            self.db.execute("UPDATE events SET data = ? WHERE id = ?", (_dumps(data), event_id))

    async def tombstone(self, event_ids: list[str]) -> None:
        for event_id in event_ids:
            row = self.db.execute("SELECT data FROM events WHERE id = ?", (event_id,)).fetchone()
            if row is None:
                continue
            data = orjson.loads(row[0])
            data["text"] = ""
            data["deleted"] = True
            self.db.execute(
                "UPDATE events SET data = ? WHERE id = ?",
                (_dumps(data), event_id),
            )

    async def ledger(self, since_seq: int = 0) -> AsyncIterator[LedgerEntry]:
        for row in self._rows(
            "SELECT seq, id, ts, kind, by, data FROM events WHERE seq > ? ORDER BY seq",
            (since_seq,),
        ):
            yield _entry(row)

    def _rows(self, sql: str, args: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
        cursor = self.db.execute(sql, args)
        while batch := cursor.fetchmany(1000):
            yield from batch

    # ---- deliveries --------------------------------------------------------------------------

    async def record_decisions(self, seq: int, decisions: list[Decision], at: str) -> None:
        # Rows wait in memory until the transaction commits or someone reads deliveries:
        # one bulk insert is cheaper than one per event, and nothing is durable sooner anyway.
        # (`str()` of a StrEnum member is its value, read several times faster than `.value`.)
        for d in decisions:
            row = (
                d.event_id,
                d.agent,
                seq,
                str(d.directedness),
                str(d.policy),
                str(d.mode),
                d.reason,
                str(d.priority),
            )
            optional = (d.deadline_ms, d.claimed_by, d.continues, d.supersedes)
            if optional == _NONE_SET:
                self._unwritten.append((*row, at))
            else:
                self._unwritten_full.append((*row, *optional, at))
        if not self._depth:
            self._flush()

    def _flush(self) -> None:
        if self._unwritten:
            self.db.executemany(_INSERT_PLAIN, self._unwritten)
            self._unwritten.clear()
        if self._unwritten_full:
            self.db.executemany(_INSERT_FULL, self._unwritten_full)
            self._unwritten_full.clear()

    async def decided_agents(self, event_id: str) -> set[str]:
        self._flush()
        rows = self.db.execute(f"SELECT agent FROM deliveries WHERE seq = {_SEQ_OF}", (event_id,))
        return {str(row[0]) for row in rows}

    async def deliveries(self, event_id: str) -> list[StoredDelivery]:
        return self._deliveries(f"seq = {_SEQ_OF} ORDER BY agent", (event_id,))

    def _deliveries(self, where: str, args: tuple[Any, ...]) -> list[StoredDelivery]:
        """Delivery records matching `where` (the rest of the statement after WHERE)."""
        self._flush()
        rows = self.db.execute(
            f"SELECT {_DELIVERY_COLUMNS}, status, attempt, disposition FROM deliveries "
            f"WHERE {where}",
            args,
        ).fetchall()
        return [_delivery(row) for row in rows]

    async def mark_failed(self, event_id: str, agent: str, reason: str, at: str) -> None:
        self._flush()
        self.db.execute(
            "UPDATE deliveries SET status = 'failed', disposition = 'failed', "
            f"disposition_reason = ?, disposed_at = ? WHERE seq = {_SEQ_OF} AND agent = ?",
            (reason, at, event_id, agent),
        )

    async def note_attempt(self, event_id: str, agent: str, attempt: int) -> None:
        self._flush()
        self.db.execute(
            f"UPDATE deliveries SET attempt = ? WHERE seq = {_SEQ_OF} AND agent = ?",
            (attempt, event_id, agent),
        )

    async def pending(self, agent: str, limit: int = 1000) -> list[StoredDelivery]:
        return self._deliveries(
            "agent = ? AND status = 'pending' ORDER BY seq LIMIT ?", (agent, limit)
        )

    async def seen_by(
        self,
        agent: str,
        *,
        conversation: str | None = None,
        thread: str | None = None,
        before_seq: int | None = None,
        after_seq: int | None = None,
        mode: str | None = None,
        limit: int = 50,
    ) -> list[tuple[LedgerEntry, StoredDelivery]]:
        self._flush()
        filters = [
            ("d.agent = ?", agent),
            ("e.conversation = ?", conversation),
            ("e.thread = ?", thread),
            ("e.seq < ?", before_seq),
            ("e.seq > ?", after_seq),
            ("d.mode = ?", mode),
        ]
        used = [(condition, value) for condition, value in filters if value is not None]
        where = [condition for condition, _ in used]
        args = [value for _, value in used]
        rows = self.db.execute(
            "SELECT e.seq, e.id, e.ts, e.kind, e.by, e.data, "
            + ", ".join(f"d.{c.strip()}" for c in _DELIVERY_COLUMNS.split(","))
            + ", d.status, d.attempt, d.disposition "
            "FROM deliveries d JOIN events e ON e.seq = d.seq "
            f"WHERE {' AND '.join(where)} ORDER BY e.seq DESC LIMIT ?",
            (*args, limit),
        ).fetchall()
        return [(_entry(row[:6]), _delivery(row[6:])) for row in reversed(rows)]

    async def overdue(self, decided_before: str) -> list[StoredDelivery]:
        return self._deliveries(
            "status = 'delivered' AND policy = 'must_respond' AND disposition IS NULL "
            "AND decided_at <= ? ORDER BY seq",
            (decided_before,),
        )

    async def revise_pending(self, seq: int, decision: Decision) -> bool:
        self._flush()
        cursor = self.db.execute(
            "UPDATE deliveries SET policy = ?, reason = ?, deadline_ms = ? "
            "WHERE seq = ? AND agent = ? AND status = 'pending'",
            (str(decision.policy), decision.reason, decision.deadline_ms, seq, decision.agent),
        )
        return cursor.rowcount > 0

    async def set_status(self, event_id: str, agent: str, status: str) -> None:
        self._flush()
        self.db.execute(
            f"UPDATE deliveries SET status = ? WHERE seq = {_SEQ_OF} AND agent = ?",
            (status, event_id, agent),
        )

    async def entry(self, seq: int) -> LedgerEntry | None:
        row = self.db.execute(
            "SELECT seq, id, ts, kind, by, data FROM events WHERE seq = ?", (seq,)
        ).fetchone()
        return None if row is None else _entry(row)

    async def set_disposition(
        self, event_id: str, agent: str, disposition: Disposition, reason: str, at: str
    ) -> bool:
        self._flush()
        cursor = self.db.execute(
            "UPDATE deliveries SET disposition = ?, disposition_reason = ?, disposed_at = ? "
            f"WHERE seq = {_SEQ_OF} AND agent = ?",
            (disposition.value, reason, at, event_id, agent),
        )
        return cursor.rowcount == 1

    async def mark_delivered(self, event_id: str, agent: str, attempt: int) -> None:
        self._flush()
        self.db.execute(
            "UPDATE deliveries SET status = 'delivered', attempt = ? "
            f"WHERE seq = {_SEQ_OF} AND agent = ?",
            (attempt, event_id, agent),
        )

    # ---- claims, outbox, escalations, quarantine -------------------------------------------

    async def claim(self, item: str, agent: str, now: datetime, ttl_ms: int) -> ClaimResult:
        expires = now + timedelta(milliseconds=ttl_ms)
        async with self.transaction():
            row = self.db.execute(
                "SELECT agent, expires_at FROM claims WHERE item = ?", (item,)
            ).fetchone()
            if row is not None and row[0] != agent and parse_time(row[1]) > now:
                return ClaimResult(False, str(row[0]), parse_time(row[1]))
            self.db.execute(
                "INSERT INTO claims (item, agent, claimed_at, expires_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (item) DO UPDATE SET agent = excluded.agent, "
                "claimed_at = excluded.claimed_at, expires_at = excluded.expires_at",
                (item, agent, format_time(now), format_time(expires)),
            )
        return ClaimResult(True, agent, expires)

    async def claims(self, now: datetime) -> dict[str, tuple[str, datetime]]:
        held: dict[str, tuple[str, datetime]] = {}
        for item, agent, expires_at in self.db.execute(
            "SELECT item, agent, expires_at FROM claims"
        ):
            expires = parse_time(expires_at)
            if expires > now:
                held[str(item)] = (str(agent), expires)
        return held

    async def put_outbox(self, key: str, agent: str, action: Mapping[str, Any], at: str) -> bool:
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO outbox (idempotency_key, agent, action, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (key, agent, _dumps(action), at, at),
        )
        return cursor.rowcount == 1

    async def outbox_due(self, limit: int = 100) -> list[OutboxEntry]:
        rows = self.db.execute(
            "SELECT idempotency_key, agent, action, status, attempts FROM outbox "
            "WHERE status IN ('pending', 'ambiguous') ORDER BY n LIMIT ?",
            (limit,),
        ).fetchall()
        return [OutboxEntry(r[0], r[1], orjson.loads(r[2]), r[3], int(r[4])) for r in rows]

    async def outbox_get(self, key: str) -> OutboxEntry | None:
        row = self.db.execute(
            "SELECT idempotency_key, agent, action, status, attempts, result FROM outbox "
            "WHERE idempotency_key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        result = orjson.loads(row[5]) if row[5] else None
        return OutboxEntry(row[0], row[1], orjson.loads(row[2]), row[3], int(row[4]), result)

    async def outbox_mark(
        self, key: str, status: str, at: str, result: Mapping[str, Any] | None = None
    ) -> None:
        attempt = 1 if status == "sending" else 0
        self.db.execute(
            "UPDATE outbox SET status = ?, attempts = attempts + ?, updated_at = ?, "
            "result = COALESCE(?, result) WHERE idempotency_key = ?",
            (status, attempt, at, _dumps(result) if result is not None else None, key),
        )

    async def outbox_recover(self, at: str) -> int:
        cursor = self.db.execute(
            "UPDATE outbox SET status = 'ambiguous', updated_at = ? WHERE status = 'sending'",
            (at,),
        )
        return cursor.rowcount

    async def outbox_has(self, key: str) -> bool:
        row = self.db.execute("SELECT 1 FROM outbox WHERE idempotency_key = ?", (key,)).fetchone()
        return row is not None

    async def record_escalation(
        self, agent: str, reason: str, conversation: str, event_id: str, at: str
    ) -> bool:
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO escalations (agent, reason, conversation, event_id, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (agent, reason, conversation, event_id, at),
        )
        return cursor.rowcount == 1

    async def audit(
        self, agent: str, what: str, outcome: str, detail: Mapping[str, Any], at: str
    ) -> None:
        self.db.execute(
            "INSERT INTO audit (at, agent, what, outcome, detail) VALUES (?, ?, ?, ?, ?)",
            (at, agent, what, outcome, _dumps(detail)),
        )

    async def quarantine(self, source: str, reason: str, payload: str, at: str) -> None:
        self.db.execute(
            "INSERT INTO quarantine (received_at, source, reason, payload) VALUES (?, ?, ?, ?)",
            (at, source, reason, payload),
        )

    # ---- gateway sessions and catch-up marks ---------------------------------------------

    async def save_gateway_session(self, platform: str, session: GatewaySession) -> None:
        self.db.execute(
            "INSERT INTO gateway_sessions (platform, bot, shard, session_id, resume_url, seq, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (platform, bot, shard) DO UPDATE SET "
            "seq = CASE WHEN session_id = excluded.session_id "
            "THEN max(seq, excluded.seq) ELSE excluded.seq END, "
            "updated_at = CASE WHEN session_id = excluded.session_id AND seq > excluded.seq "
            "THEN updated_at ELSE excluded.updated_at END, "
            "session_id = excluded.session_id, resume_url = excluded.resume_url",
            (
                platform,
                session.bot,
                session.shard,
                session.session_id,
                session.resume_url,
                session.seq,
                session.updated_at,
            ),
        )

    async def gateway_sessions(self, platform: str, bot: str) -> list[GatewaySession]:
        rows = self.db.execute(
            "SELECT bot, shard, session_id, resume_url, seq, updated_at FROM gateway_sessions "
            "WHERE platform = ? AND bot = ? ORDER BY shard",
            (platform, bot),
        )
        return [
            GatewaySession(str(r[0]), int(r[1]), str(r[2]), str(r[3]), int(r[4]), str(r[5]))
            for r in rows
        ]

    async def conversation_marks(
        self, id_prefix: str, kind: str, *, threads: bool = False
    ) -> list[ConversationMark]:
        group = "conversation, thread" if threads else "conversation"
        rows = self.db.execute(
            "SELECT e.conversation, e.id, e.ts, e.data, e.thread FROM events e JOIN ("
            "SELECT max(seq) AS seq FROM events WHERE kind = ? AND conversation != '' "
            f"AND substr(id, 1, length(?)) = ? GROUP BY {group}) newest ON e.seq = newest.seq "
            "ORDER BY e.seq",
            (kind, id_prefix, id_prefix),
        ).fetchall()
        marks = []
        for conversation, event_id, ts, data, thread in rows:
            where = (orjson.loads(data).get("conversation") or {}).get("kind", "")
            place = str(thread) if threads else ""
            marks.append(
                ConversationMark(str(conversation), str(where), str(event_id), str(ts), place)
            )
        return marks


def _dumps(value: Mapping[str, Any]) -> str:
    return orjson.dumps(value).decode()


def _entry(row: tuple[Any, ...]) -> LedgerEntry:
    return LedgerEntry(
        seq=int(row[0]),
        id=str(row[1]),
        ts=str(row[2]),
        kind=str(row[3]),
        by=str(row[4]),
        data=orjson.loads(row[5]),
    )


def _delivery(row: tuple[Any, ...]) -> StoredDelivery:
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
