"""The one SQLite connection every part of the SQLite store shares: opening it (WAL, the
schema), the transaction, and rows held back to be written in bulk when it commits.

The parts (`core.sqlite.ledger`, `.deliveries`, ...) are mixins on `Connection`, so one
`SQLiteStore` object, one connection and one transaction serve them all: the engine writes an
event, its receipts, decisions, claims and outbound actions in one commit, which separate
objects could only share by passing the connection around.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Literal

import orjson

from core.errors import StoreError
from core.sqlite.schema import SCHEMA, SCHEMA_VERSION

__all__ = ["Connection", "dumps"]


class Connection:
    """The shared connection. `path` is a file, or `":memory:"` for a throwaway ledger."""

    def __init__(
        self, path: str = ":memory:", synchronous: Literal["normal", "full"] = "normal"
    ) -> None:
        self.path = path
        self.synchronous = synchronous
        self._db: sqlite3.Connection | None = None
        self._depth = 0
        # Rows waiting for one `executemany` each, by statement (see `defer`).
        self._unwritten: dict[str, list[tuple[Any, ...]]] = {}

    async def open(self) -> None:
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
            db.execute("PRAGMA foreign_keys=ON")
            db.executescript(SCHEMA)
            db.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the ledger at {self.path}: {exc}") from None
        self._db = db

    async def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError("the ledger is not open")
        return self._db

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """One transaction; nested blocks join the outer one."""
        db = self.db
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        db.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._depth = 0
            self._unwritten.clear()
            db.execute("ROLLBACK")
            raise
        self._depth = 0
        try:
            self._flush()
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            db.execute("ROLLBACK")
            raise StoreError(f"cannot commit to the ledger: {exc}") from None

    def deferred(self, statement: str) -> list[tuple[Any, ...]]:
        """The rows waiting for `statement`: a caller appends to it, then calls `settle`.

        Inside a transaction the rows wait until it commits or someone reads (`_flush`), and
        go in with one `executemany`: cheaper than one insert each, and nothing is durable
        sooner anyway. A reader of what they write calls `_flush` first."""
        return self._unwritten.setdefault(statement, [])

    def settle(self) -> None:
        """Write the deferred rows now unless a transaction is open (then it writes them)."""
        if not self._depth:
            self._flush()

    def _flush(self) -> None:
        for statement, rows in self._unwritten.items():
            if rows:
                self.db.executemany(statement, rows)
                rows.clear()

    def _rows(self, sql: str, args: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
        """The rows of a query, fetched a thousand at a time."""
        cursor = self.db.execute(sql, args)
        while batch := cursor.fetchmany(1000):
            yield from batch


def dumps(value: Mapping[str, Any]) -> str:
    """A JSON column's text."""
    return orjson.dumps(value).decode()
