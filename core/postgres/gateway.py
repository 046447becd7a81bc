"""The PostgreSQL `GatewaySessions`: the `gateway_sessions` table, one row per platform, bot
and shard."""

from __future__ import annotations

from core.postgres.connection import Connection
from core.store import GatewaySession
from core.store_rows import gateway_from_row, gateway_row

__all__ = ["PostgresGatewaySessions"]


class PostgresGatewaySessions(Connection):
    """A save is one upsert, whose `CASE` keeps the same session's `seq` from going back."""

    async def save_gateway_session(self, platform: str, session: GatewaySession) -> None:
        await self._execute(
            "INSERT INTO gateway_sessions AS kept (platform, bot, shard, session_id, resume_url, "
            "seq, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (platform, bot, shard) DO UPDATE SET "
            "seq = CASE WHEN kept.session_id = excluded.session_id "
            "THEN greatest(kept.seq, excluded.seq) ELSE excluded.seq END, "
            "updated_at = CASE WHEN kept.session_id = excluded.session_id "
            "AND kept.seq > excluded.seq THEN kept.updated_at ELSE excluded.updated_at END, "
            "session_id = excluded.session_id, resume_url = excluded.resume_url",
            gateway_row(platform, session),
        )

    async def gateway_sessions(self, platform: str, bot: str) -> list[GatewaySession]:
        rows = await self._all(
            "SELECT bot, shard, session_id, resume_url, seq, updated_at FROM gateway_sessions "
            "WHERE platform = %s AND bot = %s ORDER BY shard",
            (platform, bot),
        )
        return [gateway_from_row(row) for row in rows]
