"""The SQLite `Snapshots`: the `memory_snapshot` table, of one row at the most."""

from __future__ import annotations

from core.sqlite.connection import Connection
from core.store import Snapshot

__all__ = ["SQLiteSnapshots"]


class SQLiteSnapshots(Connection):
    """A save replaces the row; a take deletes it and returns what it held, in one statement."""

    async def save_snapshot(self, snapshot: Snapshot) -> None:
        self.db.execute(
            "INSERT INTO memory_snapshot (id, seq, version, data) VALUES (1, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, version = excluded.version, "
            "data = excluded.data",
            (snapshot.seq, snapshot.version, snapshot.data),
        )

    async def take_snapshot(self) -> Snapshot | None:
        row = self.db.execute(
            "DELETE FROM memory_snapshot WHERE id = 1 RETURNING seq, version, data"
        ).fetchone()
        return None if row is None else Snapshot(int(row[0]), str(row[1]), bytes(row[2]))
