"""The one PostgreSQL connection every part of the PostgreSQL store shares: opening it (the
schema's migrations, under an advisory lock), and the transaction.

As in `core.sqlite.connection`, the parts are mixins on `Connection`, so one `PostgresStore`,
one connection and one transaction serve them all. The connection is in autocommit mode and
`transaction()` sends `BEGIN` and `COMMIT` itself, which lets a block inside another join it,
as the `Store` Protocol says; psycopg's connection serialises the statements of the tasks that
share it. JSON columns are read back as text, so a row reads as a SQLite row does
(`core.store_rows`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, LiteralString

import psycopg
from psycopg import pq, sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.string import TextLoader

from core.errors import StoreError
from core.migrations import RECORD_TABLE, to_apply
from core.postgres import outage
from core.postgres.schema import LOCK, MIGRATIONS, RECORD, RECORDED
from core.store_transaction import Nested

__all__ = ["Args", "Connection", "channel", "where"]

# A statement's parameters: by position (`%s`) or by name (`%(name)s`).
Args = tuple[Any, ...] | Mapping[str, Any]

# The transaction lock every transaction takes first (the first key; the second is the ledger's
# channel): appends commit in sequence order, so a reader past a sequence number never misses a
# smaller one, and no transaction that holds a row waits for it (see `Connection._hold`).
_HOLD = 0x633262

# SQLSTATE class 40, transaction rollback: a deadlock (40P01), a serialisation failure (40001).
_ROLLED_BACK = "40"


class Connection(Nested):
    """The shared connection. `url` is a libpq connection string (`postgresql://...`);
    `schema`, when given, is the PostgreSQL schema the tables live in (made if missing), so
    several workspaces can share one database; else the connection's `search_path` decides.

    A connection the server dropped (a restart, a failover) is made again before the next
    transaction or statement outside one, never inside a transaction: that one fails, rolled
    back by the server, and what it was for is tried again by its caller (Slack sends the
    event again, the outbox its round). While the server cannot be reached every statement
    raises `StoreError`, so nothing is acknowledged or sent that is not committed
    (`core.postgres.outage` says so once each way)."""

    def __init__(self, url: str, schema: str | None = None) -> None:
        self.url = url
        self.schema = schema
        self._db: psycopg.AsyncConnection[tuple[Any, ...]] | None = None
        self._epoch = 0
        self._depth = 0
        self._reconnecting = asyncio.Lock()

    async def open(self) -> None:
        db = await self._connect(f"cannot open the ledger at {where(self.url)}")
        try:
            await _migrate(db, self.schema, where(self.url))
        except BaseException as exc:
            await db.close()
            if isinstance(exc, psycopg.Error):
                raise StoreError(f"cannot open the ledger at {where(self.url)}: {exc}") from None
            raise
        self._db = db

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    @property
    def db(self) -> psycopg.AsyncConnection[tuple[Any, ...]]:
        if self._db is None:
            raise StoreError("the ledger is not open")
        return self._db

    async def _connect(self, failure: str) -> psycopg.AsyncConnection[tuple[Any, ...]]:
        """A new connection, set up as every statement expects (UTC, the schema's tables);
        raises `StoreError` starting with `failure` when the server cannot be reached."""
        at = where(self.url)
        made_in = outage.epoch(at)
        try:
            db = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
        except psycopg.Error as exc:
            outage.unreachable(at, exc)
            raise outage.error(f"{failure}: {_line(exc)}", at) from None
        for json_type in ("json", "jsonb"):
            db.adapters.register_loader(json_type, TextLoader)
        try:
            await db.execute("SET TIME ZONE 'UTC'")
            if self.schema is not None:
                name = sql.Identifier(self.schema)
                await db.execute(sql.SQL("SET search_path TO {}").format(name))
        except psycopg.Error as exc:
            await db.close()
            outage.unreachable(at, exc)
            raise outage.error(f"{failure}: {_line(exc)}", at) from None
        outage.reachable(at)
        self._epoch = made_in
        return db

    async def _usable(self) -> psycopg.AsyncConnection[tuple[Any, ...]]:
        """The connection, made again first if it broke or predates a loss of the server; by
        one task at a time, so tasks that find it broken together share one new connection."""
        async with self._reconnecting:
            db = self.db
            if _gone(db) or outage.stale(where(self.url), self._epoch):
                await db.close()
                db = await self._connect(f"the ledger at {where(self.url)} is unreachable")
                self._db = db
            return db

    async def _execute(
        self, query: LiteralString, args: Args = ()
    ) -> psycopg.AsyncCursor[tuple[Any, ...]]:
        """Run one statement; outside a transaction on a connection made again if needed.
        A lost connection raises `StoreError`."""
        if self._depth:
            await self._started()
            db = self.db
        else:
            db = await self._usable()
        try:
            return await db.execute(query, args)
        except psycopg.Error as exc:
            raise self._lost(exc) from None

    def _lost(self, exc: psycopg.Error) -> Exception:
        """What a statement that failed with `exc` raises: a `StoreError` when the connection
        is gone (every connection to the server is then made again) or the server rolled the
        transaction back to end a deadlock or a serialisation conflict (trying it again may
        work), else `exc` itself."""
        if (exc.sqlstate or "").startswith(_ROLLED_BACK):
            return StoreError(f"the ledger rolled the transaction back: {_line(exc)}")
        if not _gone(self.db):
            return exc
        at = where(self.url)
        outage.lost(at)
        return outage.error(f"lost the ledger at {at}: {_line(exc)}", at)

    async def _begin(self) -> None:
        db = await self._usable()
        try:
            await db.execute("BEGIN")
        except psycopg.Error as exc:  # a socket the server closed: BEGIN did nothing
            error = self._lost(exc)
            if not isinstance(error, StoreError):
                raise
            db = await self._usable()
            try:
                await db.execute("BEGIN")
            except psycopg.Error as again:
                raise self._lost(again) from None
        await self._hold()

    async def _hold(self) -> None:
        """Take the ledger's transaction lock (`Ledger.shared`), at `BEGIN`, before the
        transaction writes a row: one that wrote a row and then waited for the lock while
        another, holding the lock, waited for that row would deadlock (two hosts queuing one
        notice under one idempotency key did)."""
        await self._execute(
            "SELECT pg_advisory_xact_lock(%s::integer, hashtext(%s))", (_HOLD, channel(self.schema))
        )

    async def _rollback(self) -> None:
        if _gone(self.db):
            return  # the server rolled the transaction back when the connection went
        await self._execute("ROLLBACK")

    async def _commit(self) -> None:
        try:
            await self.db.execute("COMMIT")
        except psycopg.Error as exc:
            lost = self._lost(exc)
            if isinstance(lost, StoreError):  # whether it committed is not known: as if not
                raise lost from None
            raise StoreError(f"cannot commit to the ledger: {exc}") from None

    async def _one(self, query: LiteralString, args: Args = ()) -> tuple[Any, ...] | None:
        """The first row of a query, None when there is none."""
        cursor = await self._execute(query, args)
        return await cursor.fetchone()

    async def _all(self, query: LiteralString, args: Args = ()) -> list[tuple[Any, ...]]:
        """Every row of a query."""
        cursor = await self._execute(query, args)
        return await cursor.fetchall()

    async def _many(self, query: LiteralString, rows: list[tuple[Any, ...]]) -> None:
        """One statement for each of `rows`, pipelined."""
        await self._started()
        try:
            async with self.db.cursor() as cursor:
                await cursor.executemany(query, rows)
        except psycopg.Error as exc:
            raise self._lost(exc) from None

    async def _notify(self, payloads: list[str]) -> None:
        """Tell the processes listening on this ledger's channel, once the transaction commits
        (at once outside one); PostgreSQL sends a payload repeated in one transaction once."""
        if payloads:
            await self._execute(
                "SELECT pg_notify(%s, payload) FROM unnest(%s::text[]) AS payload",
                (channel(self.schema), payloads),
            )

    async def _count(self, query: LiteralString, args: Args = ()) -> int:
        """How many rows a statement wrote."""
        cursor = await self._execute(query, args)
        return cursor.rowcount


async def _migrate(
    db: psycopg.AsyncConnection[tuple[Any, ...]], schema: str | None, at: str
) -> None:
    """Bring the database's schema up to the newest migration, in one transaction, holding an
    advisory lock so that hosts starting together migrate it once."""
    async with db.transaction():
        await db.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK,))
        if schema is not None:
            name = sql.Identifier(schema)
            await db.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
            await db.execute(sql.SQL("SET search_path TO {}").format(name))
        await db.execute(RECORD)
        cursor = await db.execute(f"SELECT coalesce(max(version), 0) FROM {RECORD_TABLE}")
        row = await cursor.fetchone()
        for migration in to_apply(int(row[0]) if row else 0, MIGRATIONS, at):
            await db.execute(migration.sql.encode())
            await db.execute(RECORDED, (migration.version, migration.name))


def _gone(db: psycopg.AsyncConnection[tuple[Any, ...]]) -> bool:
    """Whether the connection can no longer be used (the server dropped it)."""
    return db.broken or db.closed or db.pgconn.status == pq.ConnStatus.BAD


def _line(exc: BaseException) -> str:
    """An error's message on one line, for a log line."""
    return " ".join(str(exc).split())


def channel(schema: str | None) -> str:
    """The NOTIFY channel of the ledger in `schema`: a commit that leaves work for another
    process (a delivery, an outbound action) notifies it (`core.postgres.listen`)."""
    return f"c2a.{schema or ''}"


def where(url: str) -> str:
    """The database a URL names, without its user or password: for messages and logs."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.Error:
        return "a PostgreSQL URL that does not parse"
    host = parts.get("host") or "localhost"
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{host}{port}/{parts.get('dbname') or ''}"
