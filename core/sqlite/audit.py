"""The SQLite `AuditLog`: the `audit`, `escalations` and `quarantine` tables, append-only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.sqlite.connection import Connection, dumps

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
            "INSERT INTO quarantine (received_at, source, reason, payload) VALUES (?, ?, ?, ?)",
            (at, source, reason, payload),
        )
