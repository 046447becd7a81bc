"""The storage backends the store contract runs against, each opening a `Store` on a database
of the test's own (see `conftest.py` here)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol, TypeVar

from core.sqlite_store import SQLiteStore
from core.store import Store

T = TypeVar("T")


class Backend(Protocol):
    """One storage backend, on a database of its own for the test."""

    def run(self, scenario: Callable[[Store], Awaitable[T]]) -> T:
        """Open a store on the test's database, run `scenario` on it, close it."""
        ...


class SQLiteBackend:
    """SQLite on a file in the test's temporary folder."""

    def __init__(self, folder: Path) -> None:
        self.path = str(folder / "ledger.sqlite3")

    def run(self, scenario: Callable[[Store], Awaitable[T]]) -> T:
        async def opened() -> T:
            store = SQLiteStore(self.path)
            await store.open()
            try:
                return await scenario(store)
            finally:
                await store.close()

        return asyncio.run(opened())


BACKENDS: dict[str, Callable[[Path], Backend]] = {"sqlite": SQLiteBackend}
