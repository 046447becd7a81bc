"""What one full garbage collection costs `c2a run` once started, before and after tuning.

    python bench/gc_pause.py [--ledger-events 2000]

Imports what `c2a run` imports (both platform libraries, the bridge, the backends), opens a
SQLite ledger and rebuilds an engine's state from it (`--ledger-events` channel messages of
the shipped team manifest, replayed first), so the heap holds what a started run holds. Then
times a full collection (`gc.collect()`, median of seven) with CPython's defaults, and again
after `c2a.gc_tuning.tune()` froze the survivors; prints the objects the collector tracks and
how often each generation would run under each set of thresholds. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

with warnings.catch_warnings():  # everything `c2a run` loads
    warnings.simplefilter("ignore", DeprecationWarning)
    import adapters.discord.plugin
    import adapters.slack.plugin  # noqa: F401
    import c2a.run  # noqa: F401

from builders import LEAD, W1, W2, local_workspace, slack_body, slack_join, slack_message  # noqa: E402

from c2a import gc_tuning  # noqa: E402
from c2a.host import Host  # noqa: E402
from core.clock import SystemClock  # noqa: E402
from core.sqlite_store import SQLiteStore  # noqa: E402


def full_collection_ms() -> float:
    times = []
    for _ in range(7):
        start = time.perf_counter()
        gc.collect()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def started_host(folder: Path, events: int) -> Host:
    """A host whose ledger holds `events` channel messages, started (its state rebuilt)."""

    async def ignore(emissions: object) -> None:
        return None

    store = SQLiteStore(str(folder / "ledger.sqlite3"))
    host = Host(local_workspace(), store, SystemClock(), ignore)
    await host.start()
    for user in (LEAD, W1, W2):
        await host.receive("slack", slack_body(slack_join(user)))
    second = int(time.time()) - events
    for n in range(events):
        text = f"<@{LEAD}> message {n}" if n % 3 == 0 else f"message {n}"
        await host.receive("slack", slack_body(slack_message(f"{second + n}.000100", text)))
    await host.close()
    again = Host(
        local_workspace(), SQLiteStore(str(folder / "ledger.sqlite3")), SystemClock(), ignore
    )
    await again.start()
    return again


async def main(events: int) -> None:
    with tempfile.TemporaryDirectory(prefix="c2a-gc-pause-") as folder:
        host = await started_host(Path(folder), events)
        tracked = len(gc.get_objects())
        before = full_collection_ms()
        defaults = gc.get_threshold()
        gc_tuning.tune()
        after = full_collection_ms()
        print(f"ledger of {events} events, state rebuilt; {tracked:,} objects tracked")
        print(f"full collection, CPython's thresholds {defaults}: {before:.1f} ms (median of 7)")
        print(
            f"full collection after tune() {gc_tuning.THRESHOLDS}, "
            f"{gc.get_freeze_count():,} frozen: {after:.1f} ms"
        )
        first, second, third = defaults
        young, middle, full = gc_tuning.THRESHOLDS
        print(
            f"net allocations between full collections at least: {first * second * third:,} "
            f"(defaults) vs {young * middle * full:,} (tuned); young generation walked every "
            f"{first:,} vs {young:,}"
        )
        await host.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ledger-events", type=int, default=2_000)
    asyncio.run(main(parser.parse_args().ledger_events))
