"""The SQLite ledger's log is checkpointed by a thread of its own, ahead of SQLite's checkpoint
in a commit on the event loop: a look at a log past its size checkpoints it and the next write
starts the log again, a small log is left alone, and the store's thread stops with the store."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

from core.sqlite.checkpoint import Checkpointer
from core.sqlite_store import SQLiteStore

AT = "2026-01-01T00:00:00Z"
NEVER = 3600.0  # the thread's own looks: the tests look for it


def log_frames(path: Path) -> int:
    """Frames in the database's log now (read with a passive checkpoint)."""
    with sqlite3.connect(path) as db:
        return int(db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])


async def write(store: SQLiteStore, first: int, count: int) -> None:
    """`count` events of a transaction each: about three log pages apiece."""
    for n in range(first, first + count):
        async with store.transaction():
            await store.append(f"e{n}", "message", "human:u", {"text": "x" * 500}, AT)


async def frames_after(where: Path, *, look: bool) -> int:
    """The log's frames after 205 writes (under SQLite's own thousand pages), looked at (or
    not) after the first 5 and the 205th, and one write more."""
    where.mkdir(exist_ok=True)
    path = where / "ledger.db"
    store = SQLiteStore(str(path))
    await store.open()
    store.stop_checkpoints()  # this test's own instead, looking only when told
    checkpointer = Checkpointer(str(path), pages=100, interval=NEVER)
    checkpointer.start()
    await write(store, 0, 5)
    assert not checkpointer.tick()  # still under 100 pages
    await write(store, 5, 200)
    if look:
        assert checkpointer.tick()
    await write(store, 205, 1)
    checkpointer.stop()
    frames = log_frames(path)
    await store.close()
    return frames


def test_a_log_past_its_size_is_checkpointed_and_the_next_write_starts_it_again(
    tmp_path: Path,
) -> None:
    assert asyncio.run(frames_after(tmp_path / "looked", look=True)) < 10
    # The same writes with no look: the log goes on growing.
    assert asyncio.run(frames_after(tmp_path / "unlooked", look=False)) > 200


def test_the_stores_thread_checkpoints_by_itself_and_stops_when_the_store_closes(
    tmp_path: Path,
) -> None:
    async def run() -> None:
        path = tmp_path / "ledger.db"
        store = SQLiteStore(str(path))
        await store.open()
        empty = path.stat().st_size
        await write(store, 0, 120)  # past the thread's 250 pages, under SQLite's thousand
        assert path.stat().st_size == empty  # all of it in the log so far
        for _ in range(500):  # the thread's look, waited for (at most five seconds)
            if path.stat().st_size > empty:
                break
            await asyncio.sleep(0.01)
        assert path.stat().st_size > empty  # copied into the database file
        await store.close()
        assert not any(t.name == "c2a-checkpoint" for t in threading.enumerate())

    asyncio.run(run())


def test_a_store_in_memory_has_no_thread() -> None:
    async def run() -> None:
        store = SQLiteStore()
        await store.open()
        assert store._checkpointer is None  # nothing to checkpoint in memory
        await store.close()

    asyncio.run(run())
