"""The SQLite `AuditLog`: the `audit`, `escalations` and `quarantine` tables, append-only (an
input quarantined again only counts on its first row), and the newest of the first and last
read back for people (`c2a audit`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.sqlite.connection import Connection, dumps
from core.store_records import AuditRecord, QuarantineRecord, quarantine_digest
from core.store_rows import QUARANTINE_AGAIN, QUARANTINED

__all__ = ["SQLiteAuditLog"]


class SQLiteAuditLog(Connection):
    """An escalation's primary key is (reason, conversation, event), so SQLite itself keeps
    the second copy out."""

    async def audit(
        self, agent: str, what: str, outcome: str, detail: Mapping[str, Any], at: str
    ) -> None:
        self.db.execute(
            "INSERT INTO audit (at, agent, what, outcome, detail) VALUES (?, ?, ?, ?, ?)",
            (at, agent, what, outcome, dumps(detail)),
        )

    async def record_escalation(
        self, agent: str, reason: str, conversation: str, event_id: str, at: str
    ) -> bool:
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO escalations (agent, reason, conversation, event_id, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (agent, reason, conversation, event_id, at),
        )
        return cursor.rowcount == 1

    async def quarantine(self, source: str, reason: str, payload: str, at: str) -> None:
        self.db.execute(
            "INSERT INTO quarantine (received_at, source, reason, payload, digest) "
            f"VALUES (?, ?, ?, ?, ?) {QUARANTINE_AGAIN}",
            (at, source, reason, payload, quarantine_digest(source, reason, payload)),
        )

    async def audit_records(self, limit: int, agent: str | None = None) -> list[AuditRecord]:
        rows = self.db.execute(
            "SELECT at, agent, what, outcome, detail FROM audit"
            " WHERE ? IS NULL OR agent = ? ORDER BY n DESC LIMIT ?",
            (agent, agent, limit),
        ).fetchall()
        return [AuditRecord.of_row(row) for row in reversed(rows)]

    async def quarantined(self, limit: int) -> list[QuarantineRecord]:
        rows = self.db.execute(
            f"SELECT {QUARANTINED} FROM quarantine ORDER BY id DESC LIMIT ?", (limit,)
        ).fetchall()
        return [QuarantineRecord(*row) for row in reversed(rows)]
