"""How long the web chat takes to serve its page when its record is long: the first start,
which hands every line to the host to be decided, a restart, when the ledger holds every line
already, and a restart after a crash cut the last lines off between the record and the ledger.

    python bench/webchat_start.py [--messages 20000] [--cut 100]

The record is written as the page writes it (one person's lines in #general of the example
manifest `team.yaml`, a second apart); the host is the real one on a SQLite ledger, its model
turns not run. Each time is from the host's start until the page is served. Figures are recorded in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]

from adapters.webchat.server import WebChat  # noqa: E402
from c2a.host import Host  # noqa: E402
from c2a.platforms import installed  # noqa: E402
from core.clock import SystemClock, format_time  # noqa: E402
from core.emission import Emission  # noqa: E402
from core.manifest import Workspace, load_manifest  # noqa: E402
from core.sqlite_store import SQLiteStore  # noqa: E402

MANIFEST = HERE.parent / "manifests" / "examples" / "team.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--cut", type=int, default=100, help="lines the ledger lacks at last")
    args = parser.parse_args()
    workspace = Workspace.from_manifest(load_manifest(MANIFEST, platforms=installed()), installed())
    with tempfile.TemporaryDirectory(prefix="webchat-start-") as folder:
        record = Path(folder) / "local.webchat.jsonl"
        _write(record, 1, args.messages)
        first = asyncio.run(_start(workspace, Path(folder)))
        again = asyncio.run(_start(workspace, Path(folder)))
        _write(record, args.messages + 1, args.cut)
        cut = asyncio.run(_start(workspace, Path(folder)))
    print(
        f"web chat record of {args.messages:,} messages, until the page is served: "
        f"first start {first:.2f} s (every line decided), restart {again:.2f} s, "
        f"restart with {args.cut:,} lines the ledger lacks {cut:.2f} s"
    )


def _write(record: Path, first: int, count: int) -> None:
    """`count` lines of ana's in #general, numbered from `first`, a second apart until now."""
    start = datetime.now(UTC) - timedelta(seconds=count)
    with record.open("ab") as file:
        for n in range(count):
            payload = {
                "type": "message",
                "id": str(first + n),
                "channel": "general",
                "thread": None,
                "user": "ana",
                "text": f"line {first + n}: how the build went today",
                "mentions": {"users": [], "roles": [], "broadcast": []},
                "replyTo": None,
                "key": None,
                "workspace": "local",
                "ts": format_time(start + timedelta(seconds=n)),
            }
            file.write(orjson.dumps(payload) + b"\n")


async def _start(workspace: Workspace, folder: Path) -> float:
    """Seconds from the host's start until the page is served; then both stop."""

    async def sink(emissions: list[Emission]) -> None:
        return None

    clock = SystemClock()
    store = SQLiteStore(str(folder / "ledger.sqlite3"))
    host = Host(workspace, store, clock, sink)
    record = folder / "local.webchat.jsonl"
    chat = WebChat(workspace, host.receive, store, clock, history=record, port=0)
    started = time.perf_counter()
    await host.start()
    await chat.start()
    took = time.perf_counter() - started
    await chat.close()
    await host.close()
    return took


if __name__ == "__main__":
    main()
