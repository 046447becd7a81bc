"""Which store a workspace gets: the manifest's `store:` (a URL, or the environment variable
that holds one), else `$C2A_DATABASE_URL`, else SQLite in the data folder; and `c2a run`
opens the one chosen."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from builders import local_workspace
from postgres_cluster import Cluster

from c2a.run import WorkspaceRun
from core.errors import ManifestError
from core.postgres_store import PostgresStore
from core.sqlite_store import SQLiteStore
from core.store_choice import StoreReference, open_store, store_url

URL = "postgresql://c2a@db.internal:5432/c2a"


def test_without_a_setting_or_the_variable_the_store_is_the_sqlite_file() -> None:
    assert store_url(None, {}) is None
    store = open_store(None, "/data/team.sqlite3", schema="team")
    assert isinstance(store, SQLiteStore) and store.path == "/data/team.sqlite3"
    assert isinstance(open_store("sqlite", "/data/team.sqlite3", "team"), SQLiteStore)
    own = open_store("sqlite:///srv/ledger.sqlite3", "/data/team.sqlite3", "team")
    assert isinstance(own, SQLiteStore) and own.path == "/srv/ledger.sqlite3"


def test_the_manifest_chooses_before_the_environment() -> None:
    environ = {"C2A_DATABASE_URL": "postgresql://other/db", "TEAM_DB": URL}
    assert store_url(None, environ) == "postgresql://other/db"
    assert store_url(URL, environ) == URL
    assert store_url(StoreReference(url_env="TEAM_DB"), environ) == URL
    assert store_url("sqlite", environ) == "sqlite"
    store = open_store(URL, "/data/team.sqlite3", schema="team")
    assert isinstance(store, PostgresStore)
    assert (store.url, store.schema) == (URL, "team")


def test_a_manifest_names_the_store_by_url_or_by_variable_and_never_holds_its_password() -> None:
    assert local_workspace(store=URL).manifest.store == URL
    by_variable = local_workspace(store={"url_env": "C2A_DATABASE_URL"}).manifest.store
    assert by_variable == StoreReference(url_env="C2A_DATABASE_URL")
    with pytest.raises(ManifestError, match="may not hold a password") as raised:
        local_workspace(store="postgresql://c2a:hunter2@db/c2a")
    assert "hunter2" not in str(raised.value)
    with pytest.raises(ManifestError, match="is not a store c2a knows"):
        local_workspace(store="mysql://db/c2a")
    with pytest.raises(ManifestError, match="url_env"):
        local_workspace(store={"url": URL})


def test_an_unset_variable_or_an_unknown_url_in_it_is_a_manifest_error() -> None:
    with pytest.raises(ManifestError, match=r"store\.url_env names TEAM_DB, which is not set"):
        store_url(StoreReference(url_env="TEAM_DB"), {})
    with pytest.raises(ManifestError, match=r"redis://\.\.\. is not a store") as raised:
        store_url(None, {"C2A_DATABASE_URL": "redis://:hunter2@cache"})
    assert "hunter2" not in str(raised.value)


def test_a_workspace_run_keeps_its_ledger_where_the_manifest_says(
    postgres_cluster: Cluster, tmp_path: Path
) -> None:
    workspace = local_workspace(store={"url_env": "TEAM_DB"})
    environ = {"TEAM_DB": postgres_cluster.database()}

    async def run_once(event_id: str) -> list[str]:
        run = WorkspaceRun(workspace, tmp_path, environ)
        assert isinstance(run.store.store.store, PostgresStore)  # behind the bell, counted
        await run.store.open()
        try:
            await run.store.append(event_id, "message", "human:u", {}, "t")
            return [entry.id async for entry in run.store.ledger()]
        finally:
            await run.store.close()

    assert asyncio.run(run_once("e1")) == ["e1"]
    assert asyncio.run(run_once("e2")) == ["e1", "e2"]
    assert not list(tmp_path.glob("*.sqlite3"))
