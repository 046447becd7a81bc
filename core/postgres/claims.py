"""The PostgreSQL `Claims`: the `claims` table, one holder per item."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.errors import StoreError
from core.postgres.connection import Connection
from core.store import ClaimResult

__all__ = ["PostgresClaims"]

# The claim is decided by the upsert alone: it writes only when the item is free, already the
# asker's, or its claim has expired, and the row lock it takes makes a racing claim wait and
# then see the winner's row. Another host's claim is decided the same way.
_TAKE = (
    "INSERT INTO claims (item, agent, claimed_at, expires_at) VALUES (%s, %s, %s, %s) "
    "ON CONFLICT (item) DO UPDATE SET agent = excluded.agent, "
    "claimed_at = excluded.claimed_at, expires_at = excluded.expires_at "
    "WHERE claims.agent = excluded.agent OR claims.expires_at <= excluded.claimed_at "
    "RETURNING agent"
)

_HAND_OVER = (
    "UPDATE claims SET agent = %s, claimed_at = %s, expires_at = %s "
    "WHERE item = %s AND agent = %s RETURNING agent"
)


class PostgresClaims(Connection):
    """A claim is one `INSERT ... ON CONFLICT DO UPDATE ... WHERE` with the expiry check, atomic
    on its own and inside a transaction; when it is refused, the holder is read after it."""

    async def claim(self, item: str, agent: str, now: datetime, ttl_ms: int) -> ClaimResult:
        expires = now + timedelta(milliseconds=ttl_ms)
        if await self._one(_TAKE, (item, agent, now, expires)) is not None:
            return ClaimResult(True, agent, expires)
        row = await self._one("SELECT agent, expires_at FROM claims WHERE item = %s", (item,))
        if row is None:  # a refused claim has a holder, and claims are never removed
            raise StoreError(f"the claim of {item!r} was refused but nobody holds it")
        return ClaimResult(False, str(row[0]), _utc(row[1]))

    async def hand_over(self, item: str, holder: str, to: str, now: datetime, ttl_ms: int) -> bool:
        expires = now + timedelta(milliseconds=ttl_ms)
        moved = await self._one(_HAND_OVER, (to, now, expires, item, holder))
        return moved is not None

    async def claims(self, now: datetime) -> dict[str, tuple[str, datetime]]:
        rows = await self._all(
            "SELECT item, agent, expires_at FROM claims WHERE expires_at > %s", (now,)
        )
        return {str(item): (str(agent), _utc(expires)) for item, agent, expires in rows}


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)
