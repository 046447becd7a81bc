"""The PostgreSQL `Deliveries`: the `deliveries` table, one row per (event, agent)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, LiteralString, Unpack

from core import store_rows
from core.decision import Decision, Disposition
from core.postgres.connection import Connection
from core.store import LedgerEntry, SeenWhere, StoredDelivery

__all__ = ["PostgresDeliveries"]

# Deliveries are keyed by the event's ledger seq, as in SQLite; a lookup by event id goes
# through the events table's unique index.
_SEQ_OF = "(SELECT seq FROM events WHERE id = %s)"
_BY_EVENT = f"seq = {_SEQ_OF} AND agent = %s"
_INSERT = store_rows.delivery_insert("%s")
_BETWEEN = store_rows.deliveries_between("%s")


class PostgresDeliveries(Connection):
    """An event's decisions go in with one `executemany` (psycopg pipelines it); they are
    written at once, so every read sees them. Their commit notifies the processes listening
    (`deliveries <agent>`), whichever runs the agent's harness."""

    async def record_decisions(
        self, seq: int, decisions: list[Decision], at: str, *, reserve: bool = False
    ) -> None:
        values = (store_rows.decision_values(seq, d) for d in decisions)
        attempt = int(reserve)
        rows = [(*filled, *optional, at, attempt) for filled, optional in values]
        if rows:
            await self._many(_INSERT, rows)
            await self._notify(sorted({f"deliveries {d.agent}" for d in decisions}))

    async def decided_agents(self, event_id: str) -> set[str]:
        rows = await self._all(f"SELECT agent FROM deliveries WHERE seq = {_SEQ_OF}", (event_id,))
        return {str(row[0]) for row in rows}

    async def deliveries(self, event_id: str) -> list[StoredDelivery]:
        return await self._deliveries(f"seq = {_SEQ_OF} ORDER BY agent", (event_id,))

    async def deliveries_between(
        self, after_seq: int, upto_seq: int
    ) -> dict[int, list[StoredDelivery]]:
        rows = await self._all(_BETWEEN, (after_seq, upto_seq))
        return store_rows.deliveries_by_seq(rows)

    async def pending(self, agent: str, limit: int = 1000) -> list[StoredDelivery]:
        return await self._deliveries(
            "agent = %s AND status = 'pending' ORDER BY seq LIMIT %s", (agent, limit)
        )

    async def overdue(self, decided_before: str) -> list[StoredDelivery]:
        return await self._deliveries(
            f"{store_rows.OPEN_OBLIGATION} AND decided_at <= %s ORDER BY seq",
            (decided_before,),
        )

    async def _deliveries(
        self, where: LiteralString, args: tuple[Any, ...]
    ) -> list[StoredDelivery]:
        """Delivery records matching `where` (the rest of the statement after WHERE)."""
        rows = await self._all(
            f"SELECT {store_rows.READ_COLUMNS} FROM deliveries WHERE {where}", args
        )
        return [store_rows.delivery_from_row(row) for row in rows]

    async def seen_by(
        self, agent: str, *, limit: int = 50, **where: Unpack[SeenWhere]
    ) -> list[tuple[LedgerEntry, StoredDelivery]]:
        given: Mapping[str, object] = where
        return store_rows.seen_from_rows(
            await self._all(*store_rows.seen_statement("%s", agent, limit, given))
        )

    async def revise_pending(self, seq: int, decision: Decision) -> bool:
        changed = await self._count(
            "UPDATE deliveries SET policy = %s, reason = %s, deadline_ms = %s "
            "WHERE seq = %s AND agent = %s AND status = 'pending'",
            (str(decision.policy), decision.reason, decision.deadline_ms, seq, decision.agent),
        )
        return changed > 0

    async def set_status(self, event_id: str, agent: str, status: str) -> None:
        await self._update("status = %s", (status,), event_id, agent)

    async def set_disposition(
        self, event_id: str, agent: str, disposition: Disposition, reason: str, at: str
    ) -> bool:
        columns: LiteralString = "disposition = %s, disposition_reason = %s, disposed_at = %s"
        if disposition is Disposition.SUPERSEDED:
            columns += store_rows.WITHDRAW_PENDING
        return await self._update(columns, (disposition.value, reason, at), event_id, agent) == 1

    async def mark_delivered(self, event_id: str, agent: str, attempt: int) -> None:
        await self._update("status = 'delivered', attempt = %s", (attempt,), event_id, agent)

    async def mark_failed(self, event_id: str, agent: str, reason: str, at: str) -> None:
        columns = (
            "status = 'failed', disposition = 'failed', disposition_reason = %s, disposed_at = %s"
        )
        await self._update(columns, (reason, at), event_id, agent)

    async def note_attempt(self, event_id: str, agent: str, attempt: int) -> None:
        await self._update("attempt = %s", (attempt,), event_id, agent)

    async def _update(
        self, columns: LiteralString, values: tuple[Any, ...], event_id: str, agent: str
    ) -> int:
        """Set `columns` (an UPDATE's SET clause) of one agent's delivery of one event; how
        many rows changed."""
        return await self._count(
            f"UPDATE deliveries SET {columns} WHERE {_BY_EVENT}", (*values, event_id, agent)
        )
