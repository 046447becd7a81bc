"""The SQLite `Retention`: one batch of `core.store_prune`'s statements in one transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from core.clock import format_time, parse_time
from core.sqlite.connection import Connection
from core.store_prune import PRUNED_BEFORE, PruneStep, prune_batch, prune_statement
from core.store_records import PrunedBatch

__all__ = ["SQLiteRetention"]


class SQLiteRetention(Connection):
    """Times are kept as ISO text in UTC (`core.clock.format_time`), claims' expiry too."""

    async def prune_batch(self, before: datetime, limit: int, after: int = 0) -> PrunedBatch:
        async with self.transaction():
            return await prune_batch(
                self._prune_step, format_time(before), format_time(before), limit, after
            )

    async def pruned_before(self) -> datetime | None:
        row = self.db.execute(PRUNED_BEFORE).fetchone()
        return None if row is None else parse_time(row[0])

    async def _prune_step(
        self, step: PruneStep, args: tuple[Any, ...]
    ) -> tuple[int, tuple[Any, ...] | None]:
        cursor = self.db.execute(prune_statement(step, "?"), args)
        row = cursor.fetchone() if cursor.description else None
        return cursor.rowcount, None if row is None else tuple(row)
