"""The storage backends the store contract runs against, each opening a `Store` on a database
of the test's own (see `conftest.py` here)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol, TypeVar

import pytest

from core.sqlite_store import SQLiteStore
from core.store import Store

T = TypeVar("T")


class Backend(Protocol):
    """One storage backend, on a database of its own for the test."""

    def run(self, scenario: Callable[[Store], Awaitable[T]]) -> T:
        """Open a store on the test's database, run `scenario` on it, close it."""
        ...

    def run_together(self, count: int, scenario: Callable[[list[Store]], Awaitable[T]]) -> T:
        """Open `count` stores on the test's database, each its own connection (as several
        hosts would), run `scenario` on them, close them."""
        ...


async def in_memory(scenario: Callable[[Store], Awaitable[T]]) -> T:
    """`scenario` on a ledger in memory, which never restarts."""
    store = SQLiteStore()
    await store.open()
    try:
        return await scenario(store)
    finally:
        await store.close()


class Opened:
    """`run` for a backend that makes a new store object for each run."""

    def store(self) -> Store:
        raise NotImplementedError

    def run(self, scenario: Callable[[Store], Awaitable[T]]) -> T:
        async def alone(stores: list[Store]) -> T:
            return await scenario(stores[0])

        return self.run_together(1, alone)

    def run_together(self, count: int, scenario: Callable[[list[Store]], Awaitable[T]]) -> T:
        async def opened() -> T:
            stores = [self.store() for _ in range(count)]
            try:
                for store in stores:
                    await store.open()
                return await scenario(stores)
            finally:
                for store in stores:
                    await store.close()

        return asyncio.run(opened())


class SQLiteBackend(Opened):
    """SQLite on a file in the test's temporary folder."""

    def __init__(self, request: pytest.FixtureRequest, folder: Path) -> None:
        self.path = str(folder / "ledger.sqlite3")

    def store(self) -> Store:
        return SQLiteStore(self.path)


class PostgresBackend(Opened):
    """PostgreSQL on a database of the test's own, in the session's throwaway cluster."""

    def __init__(self, request: pytest.FixtureRequest, folder: Path) -> None:
        self.url: str = request.getfixturevalue("postgres_cluster").database()

    def store(self) -> Store:
        from core.postgres_store import PostgresStore

        return PostgresStore(self.url)


async def race(
    stores: list[Store], items: int, ask: Callable[[Store, str, str], Awaitable[T]]
) -> dict[str, list[T]]:
    """Every store (a connection, as a host has) asks for each of `items` items (`i0`, `i1`,
    ...) twice, all at once, each ask for another asker (`a0`, `a1`, ...) in a transaction of its
    own; the answers, by item."""

    async def asked(store: Store, item: str, asker: str) -> tuple[str, T]:
        async with store.transaction():
            return item, await ask(store, item, asker)

    asks = [(store, f"i{n % items}") for n in range(2 * items) for store in stores]
    answers: dict[str, list[T]] = {}
    for item, answer in await asyncio.gather(
        *(asked(store, item, f"a{n}") for n, (store, item) in enumerate(asks))
    ):
        answers.setdefault(item, []).append(answer)
    return answers


BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], Backend]] = {
    "sqlite": SQLiteBackend,
    "postgresql": PostgresBackend,
}
