"""The PostgreSQL `AuditLog`: the `audit`, `escalations` and `quarantine` tables,
append-only (an input quarantined again only counts on its first row), and the newest of the
first and last read back for people (`c2a audit`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.postgres.connection import Connection
from core.store_records import AuditRecord, QuarantineRecord, quarantine_digest
from core.store_rows import QUARANTINE_AGAIN, QUARANTINED, dumps

__all__ = ["PostgresAuditLog"]


class PostgresAuditLog(Connection):
    """An escalation's primary key is (reason, conversation, event), so PostgreSQL itself
    keeps the second copy out. PostgreSQL's text holds no NUL character, which unreadable
    input may carry: a quarantined payload keeps each as U+FFFD."""

    async def audit(
        self, agent: str, what: str, outcome: str, detail: Mapping[str, Any], at: str
    ) -> None:
        await self._execute(
            "INSERT INTO audit (at, agent, what, outcome, detail) VALUES (%s, %s, %s, %s, %s)",
            (at, agent, what, outcome, dumps(detail)),
        )

    async def record_escalation(
        self, agent: str, reason: str, conversation: str, event_id: str, at: str
    ) -> bool:
        written = await self._count(
            "INSERT INTO escalations (agent, reason, conversation, event_id, created_at) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (agent, reason, conversation, event_id, at),
        )
        return written == 1

    async def quarantine(self, source: str, reason: str, payload: str, at: str) -> None:
        reason, payload = _no_nul(reason), _no_nul(payload)
        await self._execute(
            "INSERT INTO quarantine (received_at, source, reason, payload, digest) "
            f"VALUES (%s, %s, %s, %s, %s) {QUARANTINE_AGAIN}",
            (at, source, reason, payload, quarantine_digest(source, reason, payload)),
        )

    async def audit_records(self, limit: int, agent: str | None = None) -> list[AuditRecord]:
        rows = await self._all(
            "SELECT at, agent, what, outcome, detail::text FROM audit"
            " WHERE %s::text IS NULL OR agent = %s ORDER BY n DESC LIMIT %s",
            (agent, agent, limit),
        )
        return [AuditRecord.of_row(row) for row in reversed(rows)]

    async def quarantined(self, limit: int) -> list[QuarantineRecord]:
        rows = await self._all(
            f"SELECT {QUARANTINED} FROM quarantine ORDER BY id DESC LIMIT %s",
            (limit,),
        )
        return [QuarantineRecord(*row) for row in reversed(rows)]


def _no_nul(text: str) -> str:
    return text.replace("\x00", "\ufffd")
