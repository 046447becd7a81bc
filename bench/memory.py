"""Memory at scale: a host started over a ledger of 1,000,000 rows in 10,000 conversations.

    python bench/memory.py [--rows 1000000] [--conversations 10000] [--more 3000] [--top N]

Builds the ledger in bulk (`big_ledger.py`: Slack traffic a live host wrote, cloned), then
starts a `c2a run`-like host over it in a fresh process: `c2a.host.Host` on the SQLite file,
whose `start` folds the whole ledger into the engine's state (`Engine.rebuild`), then takes
`--more` new messages in, each through every agent's connection as Socket Mode delivers them.
Printed: rows and conversations, the time to build and to start, the process's resident
memory (`VmRSS`) after the imports, after the start and after the new messages, with its peak
(`VmHWM`), and how long the reads a running host repeats take on that ledger (the sweep's
overdue deliveries, a first digest, an outbox drain, the `/metrics` gauges), with the indexes
of migration 3 and again with them dropped, as the ledger was before it. `--top N` traces the
start with tracemalloc (several times slower) and prints the N lines that hold the most
memory. The target (issue 17): under 150 MB. Then the host stops cleanly, saving the
engine's memory (`core.memory_snapshot`), and a second fresh process starts over the same
ledger from that snapshot: its start time and memory are printed too. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

from big_ledger import BASE, PEOPLE, build, channel_id  # noqa: E402
from builders import SLACK_IDS, local_workspace, slack_body, slack_message  # noqa: E402

from c2a.host import Host  # noqa: E402
from c2a.metrics import CountedStore, Metrics  # noqa: E402
from core.clock import SystemClock, format_time  # noqa: E402
from core.emission import Emission  # noqa: E402
from core.sqlite import schema as sqlite_schema  # noqa: E402
from core.sqlite_store import SQLiteStore  # noqa: E402

__all__ = ["main", "measure"]

TARGET_MB = 150.0


def memory_mb() -> tuple[float, float]:
    """This process's resident memory and its peak, in MB (`/proc/self/status`)."""
    found = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) / 1024
    return found["VmRSS"], found["VmHWM"]


def new_bodies(conversations: int, count: int, seed: int = 71) -> list[dict[str, Any]]:
    """`count` new Slack messages after the ledger's, in conversations picked at random, one
    in twelve mentioning an agent."""
    rng = random.Random(seed)
    agents = list(SLACK_IDS.values())
    start = BASE + 10**7
    bodies = []
    for n in range(count):
        text = f"follow-up {n} on the rollout"
        if n % 12 == 0:
            text = f"<@{rng.choice(agents)}> {text}?"
        message = slack_message(
            f"{start + n}.000100",
            text,
            user=rng.choice(PEOPLE),
            channel=channel_id(rng.randrange(conversations)),
        )
        bodies.append(slack_body(message))
    return bodies


async def _measure(path: Path, conversations: int, more: int, top: int) -> dict[str, Any]:
    async def sink(emissions: list[Emission]) -> None:
        return None

    figures: dict[str, Any] = {"importedMB": memory_mb()[0]}
    bodies = new_bodies(conversations, more)
    store = SQLiteStore(str(path))
    host = Host(local_workspace(), store, SystemClock(), sink)
    if top:
        tracemalloc.start()
    began = time.perf_counter()
    await host.start()
    figures["startSeconds"] = time.perf_counter() - began
    figures["startedMB"] = memory_mb()[0]
    figures["folded"] = host.engine.folded
    if top:
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
        stats = snapshot.statistics("lineno")[:top]
        figures["top"] = [f"{s.size / 2**20:8.1f} MB {s.count:>9,} {s.traceback}" for s in stats]
    began = time.perf_counter()
    try:
        for body in bodies:
            for agent in SLACK_IDS:
                await host.receive("slack", body, agent)
        figures["moreSeconds"] = time.perf_counter() - began
        figures["afterMB"], figures["peakMB"] = memory_mb()
        figures["reads"] = await repeated_reads(store)
        for index in REREAD_INDEXES:
            store.db.execute(f"DROP INDEX {index}")
        figures["readsUnindexed"] = await repeated_reads(store)
    finally:
        began = time.perf_counter()
        await host.close()  # which saves the memory's snapshot for the next start
        figures["closeSeconds"] = time.perf_counter() - began
    figures["more"] = more
    return figures


async def _restart(path: Path) -> dict[str, Any]:
    """A start after the clean stop of `_measure`: the memory's snapshot read back."""

    async def sink(emissions: list[Emission]) -> None:
        return None

    figures: dict[str, Any] = {"importedMB": memory_mb()[0]}
    host = Host(local_workspace(), SQLiteStore(str(path)), SystemClock(), sink)
    began = time.perf_counter()
    await host.start()
    figures["startSeconds"] = time.perf_counter() - began
    figures["startedMB"] = memory_mb()[0]
    figures["folded"] = host.engine.folded
    await host.close()
    return figures


REREAD_INDEXES = re.findall(r"CREATE INDEX IF NOT EXISTS (\w+)", sqlite_schema.MIGRATIONS[2].sql)
"""The ledger's indexes for what a running host reads again: those migration 3 creates."""


async def repeated_reads(store: SQLiteStore) -> dict[str, float]:
    """What a running host reads again and again, each the median of five reads, in ms: the
    follow-up sweep's overdue deliveries (every five seconds), every agent's digest items read
    from the start (a first digest), an outbox drain's due rows, and the `/metrics` gauges."""
    counted = CountedStore(store, Metrics(), "bench")
    agents = list(local_workspace().agent_ids)
    now = datetime.now(UTC)

    async def digests() -> None:
        for agent in agents:
            await store.seen_by(agent, after_seq=0, mode="digest", limit=1000)

    async def gauges() -> None:
        await counted.queue_depths(agents)
        await counted.delivery_lag(agents, now)

    reads: dict[str, Callable[[], Awaitable[object]]] = {
        "overdue": lambda: store.overdue(format_time(now)),
        "digests": digests,
        "outbox": lambda: store.outbox_take("bench"),
        "gauges": gauges,
    }
    figures = {}
    for name, read in reads.items():
        times = []
        for _ in range(5):
            began = time.perf_counter()
            await read()
            times.append((time.perf_counter() - began) * 1000)
        figures[name] = statistics.median(times)
    return figures


def measure(
    path: Path, conversations: int, more: int, top: int = 0, restart: bool = False
) -> dict[str, Any]:
    """Start a host over the ledger at `path` in a fresh process and return its figures; with
    `restart`, only the start (after a clean stop: from the memory's snapshot)."""
    command = [sys.executable, __file__, "--measure", str(path)]
    command += ["--conversations", str(conversations), "--more", str(more), "--top", str(top)]
    command += ["--restart"] if restart else []
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the measuring process failed:\n{done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return figures


def report(rows: int, conversations: int, build_seconds: float, figures: dict[str, Any]) -> str:
    """The printed lines of one run."""
    met = "met" if figures["afterMB"] < TARGET_MB else "missed"
    again = figures["again"]
    lines = [
        f"ledger: {rows:,} rows in {conversations:,} conversations, built in {build_seconds:.1f} s",
        f"start (Engine.rebuild folds {figures['folded']:,} rows): {figures['startSeconds']:.1f} s",
        f"RSS after imports {figures['importedMB']:.1f} MB, after start "
        f"{figures['startedMB']:.1f} MB, after {figures['more']:,} more messages "
        f"({figures['moreSeconds']:.1f} s) {figures['afterMB']:.1f} MB, peak "
        f"{figures['peakMB']:.1f} MB",
        f"target: RSS under {TARGET_MB:.0f} MB: {met}",
        f"the clean stop (the memory's snapshot saved): {figures['closeSeconds']:.1f} s",
        f"the start after it (the snapshot read back, {again['folded']:,} rows held): "
        f"{again['startSeconds']:.1f} s, RSS after it {again['startedMB']:.1f} MB",
        "a running host's repeated reads, ms with the indexes of migration 3 / without: "
        + ", ".join(
            f"{name} {figures['reads'][name]:.2f} / {figures['readsUnindexed'][name]:.2f}"
            for name in figures["reads"]
        ),
    ]
    return "\n".join(lines + figures.get("top", []))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--more", type=int, default=3000, help="new messages after the start")
    parser.add_argument("--top", type=int, default=0, help="trace the start, print N lines")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--restart", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure is not None:
        if args.restart:
            figures = asyncio.run(_restart(args.measure))
        else:
            figures = asyncio.run(_measure(args.measure, args.conversations, args.more, args.top))
        print(json.dumps(figures))
        return 0
    load = os.getloadavg()
    print(f"# Memory at scale (load average {load[0]:.2f} {load[1]:.2f})", flush=True)
    with tempfile.TemporaryDirectory(prefix="memory-bench-") as folder:
        path = Path(folder) / "ledger.sqlite3"
        began = time.perf_counter()
        built = build(path, args.rows, args.conversations)
        build_seconds = time.perf_counter() - began
        figures = measure(path, args.conversations, args.more, args.top)
        figures["again"] = measure(path, args.conversations, 0, restart=True)
    print(report(built.events, built.conversations, build_seconds, figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
