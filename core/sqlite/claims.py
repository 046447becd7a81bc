"""The SQLite `Claims`: the `claims` table, one holder per item."""

from __future__ import annotations

from datetime import datetime, timedelta

from core.clock import format_time, parse_time
from core.sqlite.connection import Connection
from core.store import ClaimResult

__all__ = ["SQLiteClaims"]


class SQLiteClaims(Connection):
    """A claim reads and writes its item inside one `BEGIN IMMEDIATE` transaction (or the
    caller's), which SQLite's single writer makes atomic."""

    async def claim(self, item: str, agent: str, now: datetime, ttl_ms: int) -> ClaimResult:
        expires = now + timedelta(milliseconds=ttl_ms)
        async with self.transaction():
            row = self.db.execute(
                "SELECT agent, expires_at FROM claims WHERE item = ?", (item,)
            ).fetchone()
            if row is not None and row[0] != agent and parse_time(row[1]) > now:
                return ClaimResult(False, str(row[0]), parse_time(row[1]))
            self.db.execute(
                "INSERT INTO claims (item, agent, claimed_at, expires_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (item) DO UPDATE SET agent = excluded.agent, "
                "claimed_at = excluded.claimed_at, expires_at = excluded.expires_at",
                (item, agent, format_time(now), format_time(expires)),
            )
        return ClaimResult(True, agent, expires)

    async def hand_over(self, item: str, holder: str, to: str, now: datetime, ttl_ms: int) -> bool:
        expires = now + timedelta(milliseconds=ttl_ms)
        async with self.transaction():
            moved = self.db.execute(
                "UPDATE claims SET agent = ?, claimed_at = ?, expires_at = ? "
                "WHERE item = ? AND agent = ?",
                (to, format_time(now), format_time(expires), item, holder),
            )
        return moved.rowcount == 1

    async def claims(self, now: datetime) -> dict[str, tuple[str, datetime]]:
        held: dict[str, tuple[str, datetime]] = {}
        for item, agent, expires_at in self.db.execute(
            "SELECT item, agent, expires_at FROM claims"
        ):
            expires = parse_time(expires_at)
            if expires > now:
                held[str(item)] = (str(agent), expires)
        return held
