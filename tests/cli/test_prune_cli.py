"""`c2a prune`: drops what is older than `--days` (else the manifest's `retention:`) from the
workspace's ledger and says what went; refuses, saying what to do, when it has no number of
days, when the SQLite ledger is held by a running `c2a run`, or when there is no ledger."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from builders import ROOT
from hosts_on_postgres import Cluster, throwaway

from c2a.cli import main
from c2a.ledger_lock import LedgerLock
from core.postgres_store import PostgresStore
from core.sqlite_store import SQLiteStore

LOCAL = ROOT / "manifests" / "workspaces" / "local.yaml"
OLD = "2020-01-01T00:00:00Z"
NEW = "2999-01-01T00:00:00Z"


def ledger(data: Path) -> Path:
    """The local workspace's ledger in `data`: three messages in #general (two from 2020) and
    an audit record from 2020 and one from the future."""

    async def write() -> None:
        store = SQLiteStore(str(data / "local.sqlite3"))
        await store.open()
        general = {"conversation": {"id": "general", "kind": "channel"}}
        for event_id, ts in (("m1", OLD), ("m2", OLD), ("m3", NEW)):
            await store.append(event_id, "chat.message", "human:ana", general, ts)
        await store.audit("lead", "send", "ok", {}, OLD)
        await store.audit("lead", "send", "ok", {}, NEW)
        await store.close()

    data.mkdir()
    asyncio.run(write())
    return data / "local.sqlite3"


def webchat_history(data: Path) -> Path:
    """The local web chat's record in `data`: a message from 2020, then one from the future."""
    file = data / "local.webchat.jsonl"
    lines = [
        {"type": "message", "id": "1", "channel": "general", "user": "ana", "text": "a", "ts": OLD},
        {"type": "message", "id": "2", "channel": "general", "user": "ana", "text": "b", "ts": NEW},
    ]
    file.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return file


def left(file: Path) -> tuple[list[str], int]:
    async def read() -> tuple[list[str], int]:
        store = SQLiteStore(str(file))
        await store.open()
        try:
            ids = [entry.id async for entry in store.ledger()]
            return ids, len(await store.audit_records(10))
        finally:
            await store.close()

    return asyncio.run(read())


def test_it_drops_what_is_older_than_the_days_given_and_says_what_went(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = ledger(tmp_path / "d")
    assert main(["prune", str(LOCAL), "--data-dir", str(tmp_path / "d"), "--days", "30"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("pruned what is older than 20")
    assert said.endswith(": events 2, audit 1\n")
    assert left(file) == (["m3"], 1)
    assert main(["prune", str(LOCAL), "--data-dir", str(tmp_path / "d"), "--days", "30"]) == 0
    assert capsys.readouterr().out.endswith(": nothing\n")


def test_the_web_chats_history_in_the_data_directory_is_pruned_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    ledger(data)
    history = webchat_history(data)
    assert main(["prune", str(LOCAL), "--data-dir", str(data), "--days", "30"]) == 0
    assert capsys.readouterr().out.endswith(": events 2, audit 1, webchat messages 1\n")
    assert [orjson.loads(line)["id"] for line in history.read_bytes().splitlines()] == ["2"]


def test_a_dry_run_says_what_would_go_and_drops_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    file = ledger(data)
    history = webchat_history(data)
    kept = history.read_bytes()
    command = ["prune", str(LOCAL), "--data-dir", str(data), "--days", "30"]
    assert main([*command, "--dry-run"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("would prune what is older than 20")
    assert said.endswith(": events 2, audit 1, webchat messages 1\n")
    assert left(file) == (["m1", "m2", "m3"], 2)
    assert history.read_bytes() == kept
    assert main(command) == 0  # and then it drops what it said
    done = capsys.readouterr().out
    assert done.startswith("pruned what is older than 20")
    assert done.split(": ", 1)[1] == said.split(": ", 1)[1]
    assert left(file) == (["m3"], 1)


def test_a_history_it_cannot_read_is_said_in_a_line_after_the_ledger_is_pruned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    file = ledger(data)
    (data / "local.webchat.jsonl").mkdir()  # not a file: reading it fails
    assert main(["prune", str(LOCAL), "--data-dir", str(data), "--days", "30"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("c2a: the ledger is pruned, not the chat's own history in ")
    assert "Traceback" not in said
    assert left(file) == (["m3"], 1)
    assert main(["prune", str(LOCAL), "--data-dir", str(data), "--days", "30"]) == 2  # unlocked
    capsys.readouterr()
    assert main(["prune", str(LOCAL), "--data-dir", str(data), "--days", "1", "--dry-run"]) == 2
    assert capsys.readouterr().err.startswith("c2a: the chat's own history in ")


def test_the_manifests_retention_is_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = ledger(tmp_path / "d")
    manifest = tmp_path / "local.yaml"
    manifest.write_text(LOCAL.read_text() + "retention: {days: 365}\n")
    assert main(["prune", str(manifest), "--data-dir", str(tmp_path / "d")]) == 0
    assert left(file) == (["m3"], 1)


def test_without_days_a_held_ledger_or_a_ledger_it_refuses_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d"
    file = ledger(data)
    assert main(["prune", str(LOCAL), "--data-dir", str(data)]) == 2
    assert "give --days N, or set `retention: {days: N}` in the manifest" in capsys.readouterr().err
    history = webchat_history(data)
    written = history.read_bytes()
    running = LedgerLock(file)  # as a `c2a run` holds it (and writes the web chat's record)
    running.take()
    try:
        assert main(["prune", str(LOCAL), "--data-dir", str(data), "--days", "30"]) != 0
    finally:
        running.release()
    said = capsys.readouterr().err
    assert "in use by a running c2a (process " in said
    assert said.rstrip().endswith(
        ": set `retention: {days: N}` in its manifest and it prunes by itself, or stop it"
    )
    assert "Traceback" not in said
    assert left(file) == (["m1", "m2", "m3"], 2)
    assert history.read_bytes() == written
    assert main(["prune", str(LOCAL), "--data-dir", str(tmp_path / "none"), "--days", "3"]) == 2
    assert "no ledger at" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["prune", str(LOCAL), "--days", "0"])


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from throwaway()


def test_on_postgresql_it_prunes_the_ledger_and_leaves_the_web_chat_to_its_host(
    tmp_path: Path,
    cluster: Cluster,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = cluster.database()

    async def write() -> None:
        store = PostgresStore(url, schema="local")
        await store.open()
        general = {"conversation": {"id": "general", "kind": "channel"}}
        for event_id, ts in (("m1", OLD), ("m2", NEW)):
            await store.append(event_id, "chat.message", "human:ana", general, ts)
        await store.close()

    async def read() -> list[str]:
        store = PostgresStore(url, schema="local")
        await store.open()
        try:
            return [entry.id async for entry in store.ledger()]
        finally:
            await store.close()

    asyncio.run(write())
    data = tmp_path / "d"
    data.mkdir()
    history = webchat_history(data)  # a running host may be writing it: not this command's
    written = history.read_bytes()
    monkeypatch.setenv("C2A_DATABASE_URL", url)
    assert main(["prune", str(LOCAL), "--data-dir", str(data), "--days", "30"]) == 0
    assert capsys.readouterr().out.endswith(": events 1\n")
    assert asyncio.run(read()) == ["m2"]
    assert history.read_bytes() == written
