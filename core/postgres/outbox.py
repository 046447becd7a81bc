"""The PostgreSQL `OutboxStore`: the `outbox` table, one row per idempotency key, in queue
order (`n`, an identity column), drained by several processes at once.

A process takes due rows with one `UPDATE ... WHERE n IN (SELECT ... FOR UPDATE SKIP LOCKED)`
that writes its holder name into `taken_by`: rows another process is taking at that moment are
skipped, not waited for, and a row stays its taker's while the taker's lease `host:<holder>`
lives (`core.postgres.leases`), so a transient failure is retried by the process that tried.
A row no live process holds is anyone's; if its taker died while it was `sending`, it comes
back `ambiguous` and is looked for on the platform before any resend. The row lock lasts only
the statement, not the platform call, so the shared connection is never held across a send.
A queued action's commit notifies the listening processes (`outbox`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.postgres.connection import Connection
from core.store import OutboxEntry
from core.store_rows import DUE, OUTBOX_COLUMNS, dumps, outbox_from_row

__all__ = ["PostgresOutbox"]


# Rows no live process holds: never taken, taken by `holder` itself, or by a process whose
# `host:` lease has expired (`core.store.Leases`).
_FREE = (
    "(o.taken_by IS NULL OR o.taken_by = %(holder)s OR NOT EXISTS (SELECT 1 FROM leases "
    "WHERE leases.name = 'host:' || o.taken_by AND leases.expires_at > clock_timestamp()))"
)
_TAKE = (
    "UPDATE outbox SET taken_by = %(holder)s, "
    "status = CASE WHEN status = 'sending' THEN 'ambiguous' ELSE status END "
    "WHERE n IN (SELECT o.n FROM outbox o "
    f"WHERE o.status IN ('pending', 'ambiguous', 'sending') AND {_FREE} "
    "ORDER BY o.n LIMIT %(limit)s FOR UPDATE SKIP LOCKED) "
    "RETURNING n, idempotency_key, agent, action, status, attempts"
)
_RECOVER = (
    "UPDATE outbox o SET status = 'ambiguous', updated_at = %(at)s "
    f"WHERE o.status = 'sending' AND {_FREE}"
)


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
        if written == 1:
            await self._notify(["outbox"])
        return written == 1

    async def outbox_due(self, limit: int = 100) -> list[OutboxEntry]:
        rows = await self._all(
            "SELECT idempotency_key, agent, action, status, attempts FROM outbox "
            f"WHERE {DUE} ORDER BY n LIMIT %s",
            (limit,),
        )
        return [outbox_from_row(row) for row in rows]

    async def outbox_take(self, holder: str, limit: int = 100) -> list[OutboxEntry]:
        rows = await self._all(_TAKE, {"holder": holder, "limit": limit})
        return [outbox_from_row(row[1:]) for row in sorted(rows)]

    async def outbox_get(self, key: str) -> OutboxEntry | None:
        row = await self._one(
            f"SELECT {OUTBOX_COLUMNS} FROM outbox WHERE idempotency_key = %s",
            (key,),
        )
        return None if row is None else outbox_from_row(row)

    async def outbox_newest(self, limit: int) -> list[OutboxEntry]:
        rows = await self._all(
            f"SELECT {OUTBOX_COLUMNS} FROM outbox ORDER BY n DESC LIMIT %s", (limit,)
        )
        return [outbox_from_row(row) for row in reversed(rows)]

    async def outbox_mark(
        self, key: str, status: str, at: str, result: Mapping[str, Any] | None = None
    ) -> bool:
        sending = status == "sending"
        changed = await self._count(
            "UPDATE outbox SET status = %s, attempts = attempts + %s, updated_at = %s, "
            "result = coalesce(%s::json, result) WHERE idempotency_key = %s"
            + (f" AND {DUE}" if sending else ""),
            (status, int(sending), at, dumps(result) if result is not None else None, key),
        )
        return changed == 1

    async def outbox_recover(self, at: str) -> int:
        return await self._count(_RECOVER, {"at": at, "holder": ""})

    async def outbox_has(self, key: str) -> bool:
        row = await self._one("SELECT 1 FROM outbox WHERE idempotency_key = %s", (key,))
        return row is not None
