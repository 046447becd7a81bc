"""The SQLite `OutboxStore`: the `outbox` table, one row per idempotency key, in queue order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.sqlite.connection import Connection
from core.store import OutboxEntry
from core.store_rows import DUE, OUTBOX_COLUMNS, dumps, outbox_from_row

__all__ = ["SQLiteOutbox"]


class SQLiteOutbox(Connection):
    """The key is a unique column, so a second `put_outbox` of a key is ignored by SQLite
    itself; `n` (the rowid) keeps the queue order."""

    async def put_outbox(self, key: str, agent: str, action: Mapping[str, Any], at: str) -> bool:
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO outbox (idempotency_key, agent, action, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (key, agent, dumps(action), at, at),
        )
        return cursor.rowcount == 1

    async def outbox_due(self, limit: int = 100) -> list[OutboxEntry]:
        rows = self.db.execute(
            "SELECT idempotency_key, agent, action, status, attempts FROM outbox "
            f"WHERE {DUE} ORDER BY n LIMIT ?",
            (limit,),
        ).fetchall()
        return [outbox_from_row(row) for row in rows]

    async def outbox_take(self, holder: str, limit: int = 100) -> list[OutboxEntry]:
        return await self.outbox_due(limit)  # one process owns a SQLite ledger

    async def outbox_get(self, key: str) -> OutboxEntry | None:
        row = self.db.execute(
            f"SELECT {OUTBOX_COLUMNS} FROM outbox WHERE idempotency_key = ?",
            (key,),
        ).fetchone()
        return None if row is None else outbox_from_row(row)

    async def outbox_newest(self, limit: int) -> list[OutboxEntry]:
        rows = self.db.execute(
            f"SELECT {OUTBOX_COLUMNS} FROM outbox ORDER BY n DESC LIMIT ?", (limit,)
        ).fetchall()
        return [outbox_from_row(row) for row in reversed(rows)]

    async def outbox_mark(
        self, key: str, status: str, at: str, result: Mapping[str, Any] | None = None
    ) -> bool:
        sending = status == "sending"
        cursor = self.db.execute(
            "UPDATE outbox SET status = ?, attempts = attempts + ?, updated_at = ?, "
            "result = COALESCE(?, result) WHERE idempotency_key = ?"
            + (f" AND {DUE}" if sending else ""),
            (status, int(sending), at, dumps(result) if result is not None else None, key),
        )
        return cursor.rowcount == 1

    async def outbox_recover(self, at: str) -> int:
        cursor = self.db.execute(
            "UPDATE outbox SET status = 'ambiguous', updated_at = ? WHERE status = 'sending'",
            (at,),
        )
        return cursor.rowcount

    async def outbox_has(self, key: str) -> bool:
        row = self.db.execute("SELECT 1 FROM outbox WHERE idempotency_key = ?", (key,)).fetchone()
        return row is not None
