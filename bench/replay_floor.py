"""The parse-and-append floor of a replay: what reading a trace and making it durable costs
with nothing decided.

    python bench/replay_floor.py TRACE.jsonl [--batch 64]

Each trace line is parsed (`c2a.replay.parse_record`: the JSON, its fields, its time) and its
payload appended to a SQLite file ledger through the store's own `append` (the schema, WAL,
`synchronous=normal` of `c2a replay --store`), `--batch` lines to a transaction, as the host's
group commit takes at most `c2a.group_commit.BATCH_LIMIT` events to one. Prints one JSON line
in the shape of `c2a replay --stats` (lines, seconds, eventsPerSecond), timed like it: from
opening the store to closing it. `bench/irc_replay.py` runs it beside `c2a replay` on the same
trace. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from c2a.group_commit import BATCH_LIMIT  # noqa: E402
from c2a.replay import parse_record  # noqa: E402
from core.sqlite_store import SQLiteStore  # noqa: E402

__all__ = ["floor", "main"]


async def floor(trace: Path, ledger: Path, batch: int = BATCH_LIMIT) -> dict[str, Any]:
    """Parse every line of `trace` and append it to a new ledger at `ledger`, `batch` lines a
    transaction; returns the figures."""
    store = SQLiteStore(str(ledger))
    started = time.perf_counter()
    lines = [line for line in trace.read_bytes().splitlines() if line.strip()]
    await store.open()
    try:
        for first in range(0, len(lines), batch):
            async with store.transaction():
                for number, line in enumerate(lines[first : first + batch], start=first + 1):
                    record = parse_record(line)
                    await store.append(
                        f"line:{number}", record.platform, "floor", record.payload, "-"
                    )
    finally:
        await store.close()
    seconds = time.perf_counter() - started
    return {
        "lines": len(lines),
        "events": len(lines),
        "batch": batch,
        "seconds": round(seconds, 3),
        "eventsPerSecond": round(len(lines) / seconds, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("trace", type=Path)
    parser.add_argument("--batch", type=int, default=BATCH_LIMIT, help="lines a transaction")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="replay-floor-") as folder:
        figures = asyncio.run(floor(args.trace, Path(folder) / "floor.sqlite3", args.batch))
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
