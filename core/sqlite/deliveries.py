"""The SQLite `Deliveries`: the `deliveries` table, one row per (event, agent)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack

from core import store_rows
from core.decision import Decision, Disposition
from core.sqlite.connection import Connection
from core.store import LedgerEntry, SeenWhere, StoredDelivery

__all__ = ["SQLiteDeliveries"]

# Deliveries are keyed by the event's ledger seq (an integer key keeps inserts cheap); a
# lookup by event id goes through the events table's unique index.
_SEQ_OF = "(SELECT seq FROM events WHERE id = ?)"
_BY_EVENT = f"seq = {_SEQ_OF} AND agent = ?"

# Most decisions have no deadline, claim, continuation or edit: their rows leave those four
# columns to default to NULL, since binding a None costs sqlite3 an adapter lookup per value.
_INSERT_PLAIN = store_rows.delivery_insert("?", filled_only=True)
_NONE_SET = (None, None, None, None)
_INSERT_FULL = store_rows.delivery_insert("?")
_BETWEEN = store_rows.deliveries_between("?")


class SQLiteDeliveries(Connection):
    """Decisions are written in bulk (`Connection.deferred`), so every method here that reads
    or changes a delivery first writes what is held back."""

    async def record_decisions(
        self, seq: int, decisions: list[Decision], at: str, *, reserve: bool = False
    ) -> None:
        plain, full = self.deferred(_INSERT_PLAIN), self.deferred(_INSERT_FULL)
        attempt = int(reserve)
        for d in decisions:
            row, optional = store_rows.decision_values(seq, d)
            if optional == _NONE_SET:
                plain.append((*row, at, attempt))
            else:
                full.append((*row, *optional, at, attempt))
        self.settle()

    async def decided_agents(self, event_id: str) -> set[str]:
        self._flush()
        rows = self.db.execute(f"SELECT agent FROM deliveries WHERE seq = {_SEQ_OF}", (event_id,))
        return {str(row[0]) for row in rows}

    async def deliveries(self, event_id: str) -> list[StoredDelivery]:
        return self._deliveries(f"seq = {_SEQ_OF} ORDER BY agent", (event_id,))

    async def deliveries_between(
        self, after_seq: int, upto_seq: int
    ) -> dict[int, list[StoredDelivery]]:
        self._flush()
        rows = self.db.execute(_BETWEEN, (after_seq, upto_seq))
        return store_rows.deliveries_by_seq(rows)

    async def pending(self, agent: str, limit: int = 1000) -> list[StoredDelivery]:
        return self._deliveries(
            "agent = ? AND status = 'pending' ORDER BY seq LIMIT ?", (agent, limit)
        )

    async def overdue(self, decided_before: str) -> list[StoredDelivery]:
        return self._deliveries(
            f"{store_rows.OPEN_OBLIGATION} AND decided_at <= ? ORDER BY seq",
            (decided_before,),
        )

    def _deliveries(self, where: str, args: tuple[Any, ...]) -> list[StoredDelivery]:
        """Delivery records matching `where` (the rest of the statement after WHERE)."""
        self._flush()
        rows = self.db.execute(
            f"SELECT {store_rows.READ_COLUMNS} FROM deliveries WHERE {where}", args
        ).fetchall()
        return [store_rows.delivery_from_row(row) for row in rows]

    async def seen_by(
        self, agent: str, *, limit: int = 50, **where: Unpack[SeenWhere]
    ) -> list[tuple[LedgerEntry, StoredDelivery]]:
        self._flush()
        given: Mapping[str, object] = where
        return store_rows.seen_from_rows(
            self.db.execute(*store_rows.seen_statement("?", agent, limit, given)).fetchall()
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
        self._update("status = ?", (status,), event_id, agent)

    async def set_disposition(
        self, event_id: str, agent: str, disposition: Disposition, reason: str, at: str
    ) -> bool:
        columns = "disposition = ?, disposition_reason = ?, disposed_at = ?"
        if disposition is Disposition.SUPERSEDED:
            columns += store_rows.WITHDRAW_PENDING
        return self._update(columns, (disposition.value, reason, at), event_id, agent) == 1

    async def mark_delivered(self, event_id: str, agent: str, attempt: int) -> None:
        self._update("status = 'delivered', attempt = ?", (attempt,), event_id, agent)

    async def mark_failed(self, event_id: str, agent: str, reason: str, at: str) -> None:
        columns = (
            "status = 'failed', disposition = 'failed', disposition_reason = ?, disposed_at = ?"
        )
        self._update(columns, (reason, at), event_id, agent)

    async def note_attempt(self, event_id: str, agent: str, attempt: int) -> None:
        self._update("attempt = ?", (attempt,), event_id, agent)

    def _update(self, columns: str, values: tuple[Any, ...], event_id: str, agent: str) -> int:
        """Set `columns` (an UPDATE's SET clause) of one agent's delivery of one event; how
        many rows changed."""
        self._flush()
        cursor = self.db.execute(
            f"UPDATE deliveries SET {columns} WHERE {_BY_EVENT}", (*values, event_id, agent)
        )
        return cursor.rowcount
