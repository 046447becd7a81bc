"""The PostgreSQL `Retention`: one batch of `core.store_prune`'s statements in one transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from core.clock import format_time, parse_time
from core.postgres.connection import Connection
from core.store_prune import PRUNED_BEFORE, PruneStep, prune_batch, prune_statement
from core.store_records import PrunedBatch

__all__ = ["PostgresRetention"]


class PostgresRetention(Connection):
    """Times are kept as ISO text in UTC (`core.clock.format_time`), but a claim's expiry is a
    `timestamptz`, compared with the moment itself. Several hosts may prune at once: each
    transaction holds the ledger (`core.postgres.connection`), so their batches take turns."""

    async def prune_batch(self, before: datetime, limit: int, after: int = 0) -> PrunedBatch:
        async with self.transaction():
            return await prune_batch(self._prune_step, format_time(before), before, limit, after)

    async def pruned_before(self) -> datetime | None:
        row = await self._one(PRUNED_BEFORE)
        return None if row is None else parse_time(row[0])

    async def _prune_step(
        self, step: PruneStep, args: tuple[Any, ...]
    ) -> tuple[int, tuple[Any, ...] | None]:
        cursor = await self._execute(prune_statement(step, "%s"), args)
        row = await cursor.fetchone() if cursor.description else None
        return cursor.rowcount, None if row is None else tuple(row)
