"""A host's clean stop saves the engine's memory for the next start, which reads it back
instead of folding the ledger; a store that refuses the save costs one warning and the next
start's fold, never the stop; a host that never started saves nothing."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from builders import LEAD, local_workspace, slack_body, slack_message

from c2a.host import Host
from core.clock import VirtualClock
from core.emission import Emission
from core.errors import StoreError
from core.sqlite_store import SQLiteStore
from core.store import Snapshot


async def sink(emissions: list[Emission]) -> None:
    return None


def message(n: int) -> dict[str, Any]:
    said = slack_message(f"17672256{n:02d}.000100", f"<@{LEAD}> note {n}")
    return slack_body(said, via="lead")


class Refusing(SQLiteStore):
    """A ledger whose database refuses the snapshot's write (a full disk)."""

    async def save_snapshot(self, snapshot: Snapshot) -> None:
        raise StoreError("cannot write to the ledger: database or disk is full")


def run_host(store: SQLiteStore, messages: int) -> int:
    """Start a host on `store`, take `messages` in, stop it; the events its start folded."""

    async def main() -> int:
        host = Host(local_workspace(), store, VirtualClock(), sink)
        await host.start()
        folded = host.engine.folded
        for n in range(messages):
            await host.receive("slack", message(n), "lead")
        await host.close()
        return folded

    return asyncio.run(main())


def test_a_clean_stop_saves_the_memory_the_next_start_reads_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = str(tmp_path / "ledger.sqlite3")
    run_host(SQLiteStore(path), 3)
    caplog.set_level(logging.INFO)
    assert run_host(SQLiteStore(path), 0) == 3  # the snapshot holds the ledger up to the third
    assert "the memory saved at the last stop is read back" in caplog.text
    assert "folding the ledger after 3" in caplog.text


def test_a_store_refusing_the_snapshot_costs_a_warning_and_the_next_start_s_fold(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = str(tmp_path / "ledger.sqlite3")
    run_host(Refusing(path), 3)
    [warning] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.getMessage() == (
        "the memory is not saved for the next start: "
        "cannot write to the ledger: database or disk is full"
    )
    caplog.clear()
    caplog.set_level(logging.INFO)
    assert run_host(SQLiteStore(path), 0) == 3
    assert "read back" not in caplog.text  # nothing was saved: the ledger was folded


def test_a_host_that_never_started_saves_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteStore(str(tmp_path / "ledger.sqlite3"))

    async def main() -> None:
        await store.open()
        await Host(local_workspace(), store, VirtualClock(), sink).close()

    asyncio.run(main())
    assert not caplog.records
