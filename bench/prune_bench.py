"""What pruning costs on a grown SQLite ledger: a round with nothing to drop (what a running
host pays every hour once it is caught up), and a first prune of half the ledger (batches, rows
a second, the longest batch: how long the host's other work waits at most). Then the same for
the web chat's history file (`adapters.webchat.history`), which a round prunes in one go on the
host's loop: reading it at the start, nothing to drop, half of it, and five minutes more.

    python bench/prune_bench.py [--rows 1000000] [--conversations 10000] [--webchat 100000]

The ledger is `bench/big_ledger.py`'s (Slack traffic, every message received by three agents,
the questions answered); its records' times spread over the traffic's minutes, so "half" is
the median time. Figures are recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from big_ledger import build  # noqa: E402

from adapters.webchat.history import History  # noqa: E402
from core.clock import format_time, parse_time  # noqa: E402
from core.retention import BATCH, prune  # noqa: E402
from core.sqlite_store import SQLiteStore  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--webchat", type=int, default=100_000, help="web chat messages")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="prune-bench-") as folder:
        path = Path(folder) / "ledger.sqlite3"
        started = time.perf_counter()
        built = build(path, args.rows, args.conversations)
        print(
            f"built {built.events:,} events, {built.receipts:,} receipts, "
            f"{built.deliveries:,} decisions, {built.outbox:,} outbox rows "
            f"in {time.perf_counter() - started:.0f} s"
        )
        with sqlite3.connect(path) as db:
            (oldest,) = db.execute("SELECT min(ts) FROM events").fetchone()
            (median,) = db.execute(
                "SELECT ts FROM events ORDER BY ts LIMIT 1 OFFSET (SELECT count(*) / 2 FROM events)"
            ).fetchone()
        asyncio.run(_measure(path, parse_time(oldest), parse_time(median)))
        _measure_webchat(Path(folder) / "local.webchat.jsonl", args.webchat)


async def _measure(path: Path, oldest: datetime, median: datetime) -> None:
    store = SQLiteStore(str(path))
    await store.open()
    try:
        nothing, _ = await _timed(store, oldest - timedelta(days=1))
        print(f"a round with nothing to drop: {_ms(nothing[0])} (one batch)")
        half, dropped = await _timed(store, median)
        took, rows = sum(half), sum(dropped.values())
        print(
            f"half the ledger: {dropped['events']:,} events ({rows:,} rows with their receipts, "
            f"decisions and outbox rows) in {len(half)} batches of {BATCH:,}, {took:.1f} s, "
            f"{rows / took:,.0f} rows/s; longest batch {_ms(max(half))}"
        )
        caught_up, _ = await _timed(store, median)
        print(f"the next round, caught up: {_ms(caught_up[0])} (one batch)")
    finally:
        await store.close()


async def _timed(store: SQLiteStore, before: datetime) -> tuple[list[float], dict[str, int]]:
    """`prune`'s round, as a host runs it: each batch's seconds (the last, which drops nothing,
    included) and what the round dropped."""
    ends = [time.perf_counter()]

    async def between() -> None:
        ends.append(time.perf_counter())

    dropped = await prune(store, before, between=between)
    ends.append(time.perf_counter())
    return [end - start for start, end in pairwise(ends)], dropped


def _measure_webchat(path: Path, messages: int) -> None:
    """A history of `messages` a minute apart, every fifth a reply in the thread of the one
    before it with a reaction on it, pruned as a host does."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with path.open("wb") as file:
        for n in range(1, messages + 1):
            ts = format_time(start + timedelta(minutes=n))
            thread = str(n - 1) if n % 5 == 0 else None
            line = {"type": "message", "id": str(n), "thread": thread, "ts": ts}
            file.write(orjson.dumps({**line, "channel": "general", "user": "ana", "text": TEXT}))
            file.write(b"\n")
            if thread is not None:
                react = {"type": "reaction_added", "id": str(n), "emoji": "👍", "ts": ts}
                file.write(orjson.dumps({**react, "channel": "general", "user": "bo"}) + b"\n")
    history = History(path)
    took = _seconds(history.load)
    size = path.stat().st_size / 1e6
    print(f"web chat history of {messages:,} messages ({size:,.0f} MB): read at start {took:.1f} s")
    middle = start + timedelta(minutes=messages // 2)
    nothing = _seconds(lambda: history.forget(start))
    half = _seconds(lambda: history.forget(middle))
    left = len(history.messages)
    later = _seconds(lambda: history.forget(middle + timedelta(minutes=5)))
    print(
        f"web chat rounds: nothing to drop {_ms(nothing)}; half ({messages - left:,} messages) "
        f"{_ms(half)}; five minutes later {_ms(later)}"
    )


TEXT = "a line of about the length people write in a chat, give or take a few words here " * 2


def _seconds(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


if __name__ == "__main__":
    main()
