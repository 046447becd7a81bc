"""`c2a audit`: the newest audit records of a workspace's ledger, oldest first, a line each
that no value can break, colour or turn around; an agent's alone; as JSON; the quarantine
instead; from the workspace's schema on PostgreSQL; and a clear refusal, writing nothing, when
there is no SQLite ledger yet."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import ROOT
from hosts_on_postgres import Cluster, throwaway

from c2a.cli import main
from core.postgres_store import PostgresStore
from core.sqlite_store import SQLiteStore

LOCAL = ROOT / "manifests" / "workspaces" / "local.yaml"
AT = "2026-11-27T12:00:0{}Z"


def ledger(data: Path) -> None:
    """The local workspace's ledger in `data`, with three audit records and a quarantined
    payload whose reason carries a line break and a terminal escape, and one that came twice."""

    async def write() -> None:
        store = SQLiteStore(str(data / "local.sqlite3"))
        await store.open()
        await store.audit(
            "lead", "chat_send_message", "ok", {"key": "k1", "text": "[5]"}, AT.format(1)
        )
        await store.audit("worker-1", "approval", "refused", {"why": "no\napprovers"}, AT.format(2))
        await store.audit("lead", "command", "ok", {"said": "\x1b[31mred\u202e"}, AT.format(3))
        await store.quarantine("webchat", "not JSON:\n\x1b[2J", "{", AT.format(4))
        await store.quarantine("slack", "no team", "{}", AT.format(5))
        await store.quarantine("slack", "no team", "{}", AT.format(6))  # a retry
        await store.close()

    data.mkdir()
    asyncio.run(write())


def test_the_newest_records_a_line_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d"
    ledger(data)
    assert main(["audit", str(LOCAL), "--data-dir", str(data), "--limit", "2"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f'{AT.format(2)}  worker-1  approval  refused  why="no\\napprovers"',
        f'{AT.format(3)}  lead  command  ok  said="\\u001b[31mred\\u202e"',
    ]
    assert main(["audit", str(LOCAL), "--data-dir", str(data), "--agent", "lead", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["at"], r["what"], r["detail"]) for r in lines] == [
        (AT.format(1), "chat_send_message", {"key": "k1", "text": "[5]"}),
        (AT.format(3), "command", {"said": "\x1b[31mred\u202e"}),
    ]
    assert main(["audit", str(LOCAL), "--data-dir", str(data), "--quarantine"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{AT.format(4)}  webchat  not JSON:\\n\\u001b[2J",
        f"{AT.format(5)}  slack  no team  (2 times, last {AT.format(6)})",
    ]


def test_without_a_ledger_it_says_where_it_looked_and_creates_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", str(LOCAL), "--data-dir", str(tmp_path)]) == 2
    said = capsys.readouterr().err
    assert said.startswith(f"c2a: no ledger at {tmp_path / 'local.sqlite3'}")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(SystemExit) as refused:
        main(["audit", str(LOCAL), "--limit", "0"])
    assert refused.value.code == 2


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from throwaway()


def test_on_postgresql_it_reads_the_workspace_s_own_schema(
    tmp_path: Path,
    cluster: Cluster,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = cluster.database()

    async def write() -> None:
        for schema, said in (("local", "mute"), ("other", "unmute")):
            store = PostgresStore(url, schema=schema)
            await store.open()
            await store.audit("lead", "command", "ok", {"said": said}, AT.format(1))
            await store.close()

    asyncio.run(write())
    monkeypatch.setenv("C2A_DATABASE_URL", url)
    assert main(["audit", str(LOCAL), "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"{AT.format(1)}  lead  command  ok  said=mute\n"
    assert list(tmp_path.iterdir()) == []  # no SQLite file made on the way
