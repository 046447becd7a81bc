"""The SQLite `Leases`: the `leases` table, one holder per name, expiry in milliseconds since
the epoch. SQLite serves one process, so a lease is always its own to take; the table keeps the
same contract as PostgreSQL's, so the code above the store needs no second path."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.sqlite.connection import Connection
from core.store import Lease

__all__ = ["SQLiteLeases"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The database's clock in milliseconds since the epoch, when the caller passes no time.
_NOW = "CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER)"

# One statement decides: it writes only when the name is free, already the holder's, or its
# lease has expired (`excluded.expires_ms - ttl` is the time the call was made at).
_ACQUIRE = (
    "INSERT INTO leases (name, holder, expires_ms) VALUES (?, ?, coalesce(?, " + _NOW + ") + ?) "
    "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_ms = excluded.expires_ms "
    "WHERE leases.holder = excluded.holder OR leases.expires_ms <= excluded.expires_ms - ? "
    "RETURNING expires_ms"
)
_RENEW = (
    "UPDATE leases SET expires_ms = coalesce(?, " + _NOW + ") + ? "
    "WHERE name = ? AND holder = ? AND expires_ms > coalesce(?, " + _NOW + ") "
    "RETURNING expires_ms"
)


class SQLiteLeases(Connection):
    """Each call is one statement, atomic under SQLite's single writer."""

    async def acquire(
        self, name: str, holder: str, ttl_ms: int, now: datetime | None = None
    ) -> Lease | None:
        row = self.db.execute(_ACQUIRE, (name, holder, _ms(now), ttl_ms, ttl_ms)).fetchone()
        return None if row is None else Lease(name, holder, _moment(row[0]))

    async def renew(
        self, name: str, holder: str, ttl_ms: int, now: datetime | None = None
    ) -> Lease | None:
        at = _ms(now)
        row = self.db.execute(_RENEW, (at, ttl_ms, name, holder, at)).fetchone()
        return None if row is None else Lease(name, holder, _moment(row[0]))

    async def release(self, name: str, holder: str) -> bool:
        cursor = self.db.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))
        return cursor.rowcount == 1

    async def holders(self, now: datetime | None = None) -> list[Lease]:
        rows = self.db.execute(
            "SELECT name, holder, expires_ms FROM leases "
            "WHERE expires_ms > coalesce(?, " + _NOW + ") ORDER BY name",
            (_ms(now),),
        )
        return [Lease(str(name), str(holder), _moment(ms)) for name, holder, ms in rows]


def _ms(moment: datetime | None) -> int | None:
    """A time as milliseconds since the epoch; None (the database's clock) stays None."""
    return None if moment is None else (moment - _EPOCH) // timedelta(milliseconds=1)


def _moment(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=int(ms))
