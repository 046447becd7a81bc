"""What pruning costs on a grown SQLite ledger: a round with nothing to drop (what a running
host pays every hour once it is caught up), and a first prune of half the ledger (batches, rows
a second, the longest batch: how long the host's other work waits at most).

    python bench/prune_bench.py [--rows 1000000] [--conversations 10000]

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
from datetime import datetime, timedelta
from itertools import pairwise
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from big_ledger import build  # noqa: E402

from core.clock import parse_time  # noqa: E402
from core.retention import BATCH, prune  # noqa: E402
from core.sqlite_store import SQLiteStore  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--conversations", type=int, default=10_000)
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


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


if __name__ == "__main__":
    main()
