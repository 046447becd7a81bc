"""The PostgreSQL `Leases`: the `leases` table, one row per name with its `holder` and
`expires_at`, decided by one atomic statement each.

Why a row and not an advisory lock: an advisory lock belongs to a database session, so it would
vanish with a dropped connection (the holder's harness still running) and cannot be shared
through a connection pooler; it has no expiry to renew and nothing another host or `/metrics`
can read. A row with an expiry is visible (`holders`), survives a reconnect of its holder, and
its upsert decides a race the way a claim does (`core.postgres.claims`): the row lock makes the
second writer wait and then see the first one's row. The price is that a killed holder's lease
is taken only once it expires, which the renewal period keeps short. Expiry is the server's
clock (`clock_timestamp()`) unless a time is passed in.
"""

from __future__ import annotations

from datetime import UTC, datetime

from core.postgres.connection import Connection
from core.store import Lease

__all__ = ["PostgresLeases"]

_NOW = "coalesce(%s::timestamptz, clock_timestamp())"
_TTL = "%s * interval '1 millisecond'"

# It writes only when the name is free, already the holder's, or its lease has expired
# (`excluded.expires_at - ttl` is the time the call was made at).
_ACQUIRE = (
    f"INSERT INTO leases (name, holder, expires_at) VALUES (%s, %s, {_NOW} + {_TTL}) "
    "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at "
    f"WHERE leases.holder = excluded.holder OR leases.expires_at <= excluded.expires_at - {_TTL} "
    "RETURNING expires_at"
)
_RENEW = (
    f"UPDATE leases SET expires_at = {_NOW} + {_TTL} "
    f"WHERE name = %s AND holder = %s AND expires_at > {_NOW} RETURNING expires_at"
)


class PostgresLeases(Connection):
    """Each call is one statement, atomic on its own and inside a transaction."""

    async def acquire(
        self, name: str, holder: str, ttl_ms: int, now: datetime | None = None
    ) -> Lease | None:
        row = await self._one(_ACQUIRE, (name, holder, now, ttl_ms, ttl_ms))
        return None if row is None else Lease(name, holder, _utc(row[0]))

    async def renew(
        self, name: str, holder: str, ttl_ms: int, now: datetime | None = None
    ) -> Lease | None:
        row = await self._one(_RENEW, (now, ttl_ms, name, holder, now))
        return None if row is None else Lease(name, holder, _utc(row[0]))

    async def release(self, name: str, holder: str) -> bool:
        written = await self._count(
            "DELETE FROM leases WHERE name = %s AND holder = %s", (name, holder)
        )
        return written == 1

    async def holders(self, now: datetime | None = None) -> list[Lease]:
        rows = await self._all(
            f"SELECT name, holder, expires_at FROM leases WHERE expires_at > {_NOW} ORDER BY name",
            (now,),
        )
        return [Lease(str(name), str(holder), _utc(until)) for name, holder, until in rows]


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)
