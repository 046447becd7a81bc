"""The PostgreSQL `OutboxStore`: the `outbox` table, one row per idempotency key, in queue
order (`n`, an identity column)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.postgres.connection import Connection
from core.store import OutboxEntry
from core.store_rows import OUTBOX_COLUMNS, dumps, outbox_from_row

__all__ = ["PostgresOutbox"]


class PostgresOutbox(Connection):
    """The key is a unique column, so a second `put_outbox` of a key changes nothing. The due
    rows have a partial index in queue order, ready for several hosts to take them with
    `FOR UPDATE SKIP LOCKED`."""

    async def put_outbox(self, key: str, agent: str, action: Mapping[str, Any], at: str) -> bool:
        written = await self._count(
            "INSERT INTO outbox (idempotency_key, agent, action, created_at, updated_at) "
            "VALUES (%s, %s, %s::json, %s, %s) ON CONFLICT (idempotency_key) DO NOTHING",
            (key, agent, dumps(action), at, at),
        )
        return written == 1

    async def outbox_due(self, limit: int = 100) -> list[OutboxEntry]:
        rows = await self._all(
            "SELECT idempotency_key, agent, action, status, attempts FROM outbox "
            "WHERE status IN ('pending', 'ambiguous') ORDER BY n LIMIT %s",
            (limit,),
        )
        return [outbox_from_row(row) for row in rows]

    async def outbox_get(self, key: str) -> OutboxEntry | None:
        row = await self._one(
            f"SELECT {OUTBOX_COLUMNS} FROM outbox WHERE idempotency_key = %s",
            (key,),
        )
        return None if row is None else outbox_from_row(row)

    async def outbox_mark(
        self, key: str, status: str, at: str, result: Mapping[str, Any] | None = None
    ) -> None:
        attempt = 1 if status == "sending" else 0
        await self.db.execute(
            "UPDATE outbox SET status = %s, attempts = attempts + %s, updated_at = %s, "
            "result = coalesce(%s::json, result) WHERE idempotency_key = %s",
            (status, attempt, at, dumps(result) if result is not None else None, key),
        )

    async def outbox_recover(self, at: str) -> int:
        return await self._count(
            "UPDATE outbox SET status = 'ambiguous', updated_at = %s WHERE status = 'sending'",
            (at,),
        )

    async def outbox_has(self, key: str) -> bool:
        row = await self._one("SELECT 1 FROM outbox WHERE idempotency_key = %s", (key,))
        return row is not None
