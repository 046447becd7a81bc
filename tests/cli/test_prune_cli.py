"""`c2a prune`: drops what is older than `--days` (else the manifest's `retention:`) from the
workspace's ledger and says what went; refuses, saying what to do, when it has no number of
days, when the SQLite ledger is held by a running `c2a run`, or when there is no ledger."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from builders import ROOT

from c2a.cli import main
from c2a.ledger_lock import LedgerLock
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
    running = LedgerLock(file)  # as a `c2a run` holds it
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
    assert main(["prune", str(LOCAL), "--data-dir", str(tmp_path / "none"), "--days", "3"]) == 2
    assert "no ledger at" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["prune", str(LOCAL), "--days", "0"])
