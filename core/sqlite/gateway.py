"""The SQLite `GatewaySessions`: the `gateway_sessions` table, one row per platform, bot and
shard."""

from __future__ import annotations

from core.sqlite.connection import Connection
from core.store import GatewaySession
from core.store_rows import gateway_from_row, gateway_row

__all__ = ["SQLiteGatewaySessions"]


class SQLiteGatewaySessions(Connection):
    """A save is one upsert, whose `CASE` keeps the same session's `seq` from going back."""

    async def save_gateway_session(self, platform: str, session: GatewaySession) -> None:
        self.db.execute(
            "INSERT INTO gateway_sessions (platform, bot, shard, session_id, resume_url, seq, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (platform, bot, shard) DO UPDATE SET "
            "seq = CASE WHEN session_id = excluded.session_id "
            "THEN max(seq, excluded.seq) ELSE excluded.seq END, "
            "updated_at = CASE WHEN session_id = excluded.session_id AND seq > excluded.seq "
            "THEN updated_at ELSE excluded.updated_at END, "
            "session_id = excluded.session_id, resume_url = excluded.resume_url",
            gateway_row(platform, session),
        )

    async def gateway_sessions(self, platform: str, bot: str) -> list[GatewaySession]:
        rows = self.db.execute(
            "SELECT bot, shard, session_id, resume_url, seq, updated_at FROM gateway_sessions "
            "WHERE platform = ? AND bot = ? ORDER BY shard",
            (platform, bot),
        )
        return [gateway_from_row(row) for row in rows]
