"""The PostgreSQL `Snapshots`: the `memory_snapshot` table, of one row at the most."""

from __future__ import annotations

from core.postgres.connection import Connection
from core.store import Snapshot

__all__ = ["PostgresSnapshots"]


class PostgresSnapshots(Connection):
    """A save replaces the row; a take deletes it and returns what it held, in one statement,
    so of two processes taking it at once one gets it."""

    async def save_snapshot(self, snapshot: Snapshot) -> None:
        await self._execute(
            "INSERT INTO memory_snapshot (id, seq, version, data) VALUES (1, %s, %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, version = excluded.version, "
            "data = excluded.data",
            (snapshot.seq, snapshot.version, snapshot.data),
        )

    async def take_snapshot(self) -> Snapshot | None:
        row = await self._one(
            "DELETE FROM memory_snapshot WHERE id = 1 RETURNING seq, version, data"
        )
        return None if row is None else Snapshot(int(row[0]), str(row[1]), bytes(row[2]))
