"""The ledger under one host and under two: one process on SQLite, one on PostgreSQL, two on
one PostgreSQL.

    python bench/ledger_hosts.py [--events 2000]

Each host is an OS process of its own running `c2a.host.Host.receive` (normalise, the ledger
transaction with the decisions for every agent, the commit) on Slack mentions of the agents in
turn, as fast as it can take them. With two hosts, each receives every event, as every `c2a run`
process does over its own Socket Mode connection: the first copy is decided, the second is a
repeat. PostgreSQL is the tests' throwaway cluster (`tests/core/store/postgres_cluster.py`:
a Unix socket, `synchronous_commit` on); SQLite a file in a temporary folder.

Printed per setup: distinct events per second (from the first receive to the last commit of
any host) and the latency of one receive, from the call to its commit, which is when the
deliveries are readable by the harnesses' deliverers (p50, p99, max, over every receive of
every host). It measures the ledger path, not the platform connections nor the harnesses
(`bench/live_bench.py` does those). Asserts nothing: the figures go to docs/benchmarks.md,
with `uptime` beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "core" / "store")]

from builders import (  # noqa: E402
    HUMAN,
    SLACK_IDS,
    local_workspace,
    slack_body,
    slack_join,
    slack_message,
)
from postgres_cluster import Cluster  # noqa: E402

from c2a.host import Host  # noqa: E402
from core.clock import SystemClock  # noqa: E402
from core.emission import Emission  # noqa: E402
from core.store_choice import open_store  # noqa: E402

BASE = 1767225600


def bodies(events: int) -> list[dict[str, Any]]:
    """The agents joining #general, then `events` mentions there, each of the next agent in
    turn (decided for every agent: one delivery each)."""
    agents = list(SLACK_IDS.values())
    joins = [slack_body(slack_join(agent)) for agent in agents]
    return joins + [
        slack_body(
            slack_message(f"{BASE + i}.000100", f"<@{agents[i % len(agents)]}> q {i}", user=HUMAN)
        )
        for i in range(events)
    ]


async def _host(url: str | None, folder: str, events: int, start: Any) -> list[float]:
    async def sink(emissions: list[Emission]) -> None:
        return None

    store = open_store(url, os.path.join(folder, "bench.sqlite3"), schema="bench")
    host = Host(local_workspace(), store, SystemClock(), sink)
    await host.start()
    payloads = bodies(events)
    start.wait()
    latencies = []
    try:
        for payload in payloads:
            began = time.perf_counter()
            await host.receive("slack", payload)
            latencies.append(time.perf_counter() - began)
    finally:
        await host.close()
    return latencies


def host_process(url: str | None, folder: str, events: int, start: Any, out: Any) -> None:
    """One host: every event received once; its latencies and when it finished go to `out`."""
    latencies = asyncio.run(_host(url, folder, events, start))
    out.put((latencies, time.time()))


def measure(url: str | None, hosts: int, events: int) -> tuple[float, list[float]]:
    """Events per second and every receive's latency, with `hosts` processes."""
    context = multiprocessing.get_context("spawn")
    start, out = context.Barrier(hosts + 1), context.Queue()
    with tempfile.TemporaryDirectory() as folder:
        processes = [
            context.Process(target=host_process, args=(url, folder, events, start, out))
            for _ in range(hosts)
        ]
        for process in processes:
            process.start()
        start.wait()
        began = time.time()
        results = [out.get() for _ in processes]
        for process in processes:
            process.join()
    ended = max(finished for _, finished in results)
    latencies = sorted(x for found, _ in results for x in found)
    return events / (ended - began), latencies  # per mention: the joins are not counted


def _ms(latencies: list[float], share: float) -> float:
    return 1000 * latencies[min(len(latencies) - 1, int(share * len(latencies)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}", flush=True)
    cluster = Cluster()
    cluster.start()
    try:
        setups = [
            ("one host, SQLite", None, 1),
            ("one host, PostgreSQL", cluster.database(), 1),
            ("two hosts, one PostgreSQL", cluster.database(), 2),
        ]
        print(f"{'setup':28} {'events/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
        for name, url, hosts in setups:
            rate, latencies = measure(url, hosts, args.events)
            figures = (_ms(latencies, 0.5), _ms(latencies, 0.99), 1000 * latencies[-1])
            print(f"{name:28} {rate:9.0f} {figures[0]:8.2f} {figures[1]:8.2f} {figures[2]:8.2f}")
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
