"""From a tool call returning to the platform call starting: how long a queued reply waits.

    python bench/reply_wake.py [--replies 300]

A reply is queued as the chat tools queue one (its own transaction on a SQLite ledger on disk);
the moment that transaction ends is the tool call returning. The outbox loop of `c2a run`
(`Outbox.run`, its fallback poll `OUTBOX_EVERY`) hands it to a sender that notes when its call
starts. Measured with the ledger behind a `QueueBell` (woken at the commit) and without one
(found by the poll alone, as before), p50 and p99 of each. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from c2a.run_loops import OUTBOX_EVERY
from core.action_records import to_record
from core.actions import Action, Post
from core.clock import SystemClock
from core.outbox import Outbox, QueueBell
from core.sqlite_store import SQLiteStore
from core.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live_load import percentile


class NotingSender:
    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.landed = asyncio.Event()

    async def send(self, action: Action) -> dict[str, Any]:
        self.started[action.key] = time.monotonic()
        self.landed.set()
        return {"messageId": action.key}

    async def find(self, action: Action) -> dict[str, Any] | None:
        return None


async def measure(replies: int, woken: bool, folder: Path) -> list[float]:
    store = SQLiteStore(str(folder / f"ledger-{woken}.sqlite3"))
    await store.open()
    ledger: Store = QueueBell(store) if woken else store
    sender = NotingSender()
    due = ledger.due if isinstance(ledger, QueueBell) else None
    outbox = Outbox(store, SystemClock(), {"slack": sender}, due=due)
    loop = asyncio.create_task(outbox.run(OUTBOX_EVERY, lambda: False))
    waits = []
    for n in range(replies):
        key = f"r{n}"
        post = Post(agent="lead", platform="slack", conversation="C0GEN", key=key, text="on it")
        sender.landed.clear()
        async with ledger.transaction():
            await ledger.put_outbox(key, "lead", to_record(post), "2026-01-01T00:00:00Z")
        returned = time.monotonic()
        await sender.landed.wait()
        waits.append((sender.started[key] - returned) * 1000)
        await asyncio.sleep(0.001 * (n % 7))  # replies come at no fixed phase of the poll
    loop.cancel()
    await store.close()
    return waits


async def main(replies: int) -> None:
    with tempfile.TemporaryDirectory(prefix="c2a-reply-wake-") as folder:
        for woken in (False, True):
            waits = await measure(replies if woken else max(20, replies // 10), woken, Path(folder))
            name = "woken at commit" if woken else f"polled every {OUTBOX_EVERY} s"
            print(
                f"{name:>24}: tool call returned -> platform call started "
                f"p50 {percentile(waits, 50):.3f} ms, p99 {percentile(waits, 99):.3f} ms "
                f"({len(waits)} replies)"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replies", type=int, default=300)
    asyncio.run(main(parser.parse_args().replies))
