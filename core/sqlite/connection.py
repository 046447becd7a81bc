"""The one SQLite connection every part of the SQLite store shares: opening it (WAL, the
schema's migrations, the log's checkpoints on a thread: `core.sqlite.checkpoint`), the
transaction, and rows held back to be written in bulk when it commits.

The parts (`core.sqlite.ledger`, `.deliveries`, ...) are mixins on `Connection`, so one
`SQLiteStore` object, one connection and one transaction serve them all: the engine writes an
event, its receipts, decisions, claims and outbound actions in one commit, which separate
objects could only share by passing the connection around.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any, Literal

from core.errors import StoreError
from core.migrations import RECORD_TABLE, to_apply
from core.sqlite.checkpoint import Checkpointer
from core.sqlite.schema import MIGRATIONS, RECORD, RECORDED, VERSION_BEFORE
from core.store_rows import dumps
from core.store_transaction import Nested

__all__ = ["Connection", "dumps"]


class Connection(Nested):
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
        self._checkpointer: Checkpointer | None = None

    async def open(self) -> None:
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
            db.execute("PRAGMA foreign_keys=ON")
            _migrate(db, self.path)
            if self.path != ":memory:":  # a file's log is checkpointed off the event loop
                self._checkpointer = Checkpointer(self.path)
                self._checkpointer.start()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the ledger at {self.path}: {exc}") from None
        self._db = db

    def stop_checkpoints(self) -> None:
        """Stop checkpointing the log (when the store closes; a test's own checkpoints)."""
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None

    async def close(self) -> None:
        self.stop_checkpoints()
        if self._db is not None:
            self._db.close()
            self._db = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError("the ledger is not open")
        return self._db

    async def _begin(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    async def _rollback(self) -> None:
        self._unwritten.clear()
        self.db.execute("ROLLBACK")

    async def _commit(self) -> None:
        try:
            self._flush()
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            self.db.execute("ROLLBACK")
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


def _migrate(db: sqlite3.Connection, where: str) -> None:
    """Bring the file's schema up to the newest migration, each in its own transaction with
    its record; a file from before the record is taken to be at the version `meta` names."""
    db.execute(RECORD)
    current = db.execute(f"SELECT max(version) FROM {RECORD_TABLE}").fetchone()[0]
    if current is None:
        current = _version_before(db)
        db.executemany(RECORDED, [(m.version, m.name) for m in MIGRATIONS[:current]])
    for migration in to_apply(current, MIGRATIONS, where):
        try:
            db.executescript(f"BEGIN IMMEDIATE;\n{migration.sql}")
            db.execute(RECORDED, (migration.version, migration.name))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise


def _version_before(db: sqlite3.Connection) -> int:
    """The schema version a file written before migrations were recorded is at (0: none)."""
    found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'")
    if found.fetchone() is None:
        return 0
    row = db.execute(VERSION_BEFORE).fetchone()
    return 0 if row is None else int(row[0])
