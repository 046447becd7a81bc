"""Schema migrations: a new database gets every migration, recorded once; a SQLite file from
before migrations were recorded is recognised as at version 1 and keeps its rows; a database
newer than the code is refused; hosts opening one new PostgreSQL database at once migrate it
once."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import psycopg
import pytest
from postgres_cluster import Cluster

from core.errors import StoreError
from core.migrations import Migration, latest, to_apply
from core.postgres import schema as postgres_schema
from core.postgres_store import PostgresStore
from core.sqlite import schema as sqlite_schema
from core.sqlite_store import SQLiteStore
from core.store import Store

AT = "2026-01-01T00:00:00Z"


def sqlite_versions(path: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as db:
        return list(db.execute("SELECT version, name FROM schema_migrations ORDER BY version"))


def postgres_versions(url: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as db:
        rows = db.execute("SELECT version, name FROM schema_migrations ORDER BY version")
        return [(int(version), str(name)) for version, name in rows]


def every(migrations: tuple[Migration, ...]) -> list[tuple[int, str]]:
    return [(m.version, m.name) for m in migrations]


def test_migrations_are_numbered_from_one_without_gaps() -> None:
    steps = [Migration(1, "a", ""), Migration(2, "b", "")]
    assert latest(steps) == 2
    assert to_apply(0, steps, "here") == steps
    assert to_apply(1, steps, "here") == steps[1:]
    assert to_apply(2, steps, "here") == []
    with pytest.raises(StoreError, match="schema version 3, newer than this c2a knows"):
        to_apply(3, steps, "here")
    with pytest.raises(ValueError, match="without gaps"):
        latest([Migration(1, "a", ""), Migration(3, "c", "")])
    assert latest(sqlite_schema.MIGRATIONS) == latest(postgres_schema.MIGRATIONS)


async def open_and_close(store: Store) -> None:
    await store.open()
    await store.close()


def test_a_new_sqlite_file_records_every_migration_once(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    for _ in range(2):
        asyncio.run(open_and_close(SQLiteStore(str(path))))
    assert sqlite_versions(path) == every(sqlite_schema.MIGRATIONS)


def test_a_sqlite_file_from_before_migrations_opens_at_version_1(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with sqlite3.connect(path) as db:  # the schema and marker such a file has, and an event
        db.executescript(sqlite_schema.MIGRATIONS[0].sql)
        db.execute(
            "INSERT INTO events (id, ts, kind, by, data) VALUES ('e1', ?, 'message', 'h', '{}')",
            (AT,),
        )

    async def reopen() -> int | None:
        store = SQLiteStore(str(path))
        await store.open()
        try:
            return await store.sequence_of("e1")
        finally:
            await store.close()

    assert asyncio.run(reopen()) == 1
    assert sqlite_versions(path)[0] == (1, "the ledger's tables")


def test_a_sqlite_file_one_version_behind_keeps_its_rows(tmp_path: Path) -> None:
    """A ledger written by the c2a before the newest migration: opened by this one, it is
    migrated, and what it held is still there and still due."""
    path = tmp_path / "ledger.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute(sqlite_schema.RECORD)
        for migration in sqlite_schema.MIGRATIONS[:-1]:
            db.executescript(migration.sql)
            db.execute(sqlite_schema.RECORDED, (migration.version, migration.name))
        db.execute(
            "INSERT INTO outbox (idempotency_key, agent, action, created_at, updated_at) "
            "VALUES ('k1', 'lead', '{}', ?, ?)",
            (AT, AT),
        )
    assert asyncio.run(due_after_opening(SQLiteStore(str(path)))) == ["k1"]
    assert sqlite_versions(path) == every(sqlite_schema.MIGRATIONS)


async def due_after_opening(store: Store) -> list[str]:
    await store.open()
    try:
        return [entry.key for entry in await store.outbox_due()]
    finally:
        await store.close()


def test_a_sqlite_file_newer_than_this_code_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    asyncio.run(open_and_close(SQLiteStore(str(path))))
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO schema_migrations VALUES (99, 'from the future', ?)", (AT,))
    with pytest.raises(StoreError, match="schema version 99, newer than this c2a knows"):
        asyncio.run(open_and_close(SQLiteStore(str(path))))


def test_postgres_hosts_opening_a_new_database_together_migrate_it_once(
    postgres_cluster: Cluster,
) -> None:
    url = postgres_cluster.database()

    async def open_together() -> None:
        stores = [PostgresStore(url) for _ in range(4)]
        await asyncio.gather(*(store.open() for store in stores))
        await asyncio.gather(*(store.close() for store in stores))

    asyncio.run(open_together())
    assert postgres_versions(url) == every(postgres_schema.MIGRATIONS)


def test_a_postgres_database_one_version_behind_keeps_its_rows(postgres_cluster: Cluster) -> None:
    url = postgres_cluster.database()
    with psycopg.connect(url) as db:
        db.execute(postgres_schema.RECORD)
        for migration in postgres_schema.MIGRATIONS[:-1]:
            db.execute(migration.sql.encode())
            db.execute(postgres_schema.RECORDED, (migration.version, migration.name))
        db.execute(
            "INSERT INTO outbox (idempotency_key, agent, action, created_at, updated_at) "
            "VALUES ('k1', 'lead', '{}', %s, %s)",
            (AT, AT),
        )
    assert asyncio.run(due_after_opening(PostgresStore(url))) == ["k1"]
    assert postgres_versions(url) == every(postgres_schema.MIGRATIONS)


def test_a_postgres_database_newer_than_this_code_is_refused(postgres_cluster: Cluster) -> None:
    url = postgres_cluster.database()
    asyncio.run(open_and_close(PostgresStore(url)))
    with psycopg.connect(url) as db:
        db.execute("INSERT INTO schema_migrations (version, name) VALUES (99, 'from the future')")
    with pytest.raises(StoreError, match="schema version 99, newer than this c2a knows"):
        asyncio.run(open_and_close(PostgresStore(url)))


def test_a_postgres_schema_per_workspace_keeps_two_ledgers_apart(
    postgres_cluster: Cluster,
) -> None:
    url = postgres_cluster.database()

    async def append(schema: str, event_id: str) -> list[str]:
        store = PostgresStore(url, schema=schema)
        await store.open()
        try:
            await store.append(event_id, "message", "human:u", {}, AT)
            return [entry.id async for entry in store.ledger()]
        finally:
            await store.close()

    assert asyncio.run(append("team_a", "a1")) == ["a1"]
    assert asyncio.run(append("team-b", "b1")) == ["b1"]
    assert asyncio.run(append("team_a", "a2")) == ["a1", "a2"]


def test_an_unreachable_postgres_is_a_store_error_without_the_password(tmp_path: Path) -> None:
    url = f"postgresql://c2a:hunter2@/c2a?host={tmp_path}&connect_timeout=2"
    with pytest.raises(StoreError) as raised:
        asyncio.run(PostgresStore(url).open())
    assert "hunter2" not in str(raised.value)
    assert f"postgresql://{tmp_path}/c2a" in str(raised.value)
