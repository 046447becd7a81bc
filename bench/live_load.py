"""The live benchmark's measuring: open-loop pacing, the recordings read back, latency
percentiles, and a process's CPU time and resident memory from /proc.

Pure where it can be: `summarise` turns send times and receipts into the figures printed.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Figures",
    "Receipt",
    "cpu_seconds",
    "paced",
    "percentile",
    "read_receipts",
    "rss_mb",
    "summarise",
]

_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class Receipt:
    """One agent's copy of one message arriving: a `chat/deliver`, or a bare handler call."""

    agent: str
    key: str  # a Slack ts or a Discord message id
    at: float  # CLOCK_MONOTONIC seconds


@dataclass(frozen=True, slots=True)
class Figures:
    """One side at one rate."""

    messages: int
    offered: float  # messages/s actually sent
    received: int  # (agent, message) pairs that arrived
    expected: int
    doubled: int  # (agent, message) pairs that arrived more than once
    p50_ms: float
    p99_ms: float
    max_ms: float
    throughput: float  # messages/s that reached every agent, first send to last arrival
    cpu_us_per_event: float
    rss_mb: float


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..100) of `values`; NaN when there are none."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def key_of(event_id: str) -> str:
    """What ends an event id (`slack:T:C:<ts>`, `discord:<message id>`): the message's key."""
    return event_id.rsplit(":", 1)[-1]


def read_receipts(paths: Iterable[Path]) -> list[Receipt]:
    """Every line of the recorders' files (`<agent> <eventId or key> <time>`)."""
    receipts: list[Receipt] = []
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) == 3:
                receipts.append(Receipt(parts[0], key_of(parts[1]), float(parts[2])))
    return receipts


def summarise(
    sent: dict[str, float],
    receipts: list[Receipt],
    *,
    agents: int,
    events_per_message: int,
    cpu_s: float,
    rss: float,
    last_send: float,
) -> Figures:
    """The figures of one phase: latency from each message's first write to each agent's first
    receipt of it; receipts of messages not in `sent` (other phases) are left out."""
    first: dict[tuple[str, str], float] = {}
    doubled = 0
    for receipt in receipts:
        if receipt.key not in sent:
            continue
        pair = (receipt.agent, receipt.key)
        if pair in first:
            doubled += 1
            first[pair] = min(first[pair], receipt.at)
        else:
            first[pair] = receipt.at
    latencies = [(at - sent[key]) * 1000 for (_, key), at in first.items()]
    start = min(sent.values(), default=0.0)
    end = max(first.values(), default=start)
    span = max(last_send - start, 1e-9)
    events = len(sent) * events_per_message
    return Figures(
        messages=len(sent),
        offered=(len(sent) - 1) / span if len(sent) > 1 else 0.0,
        received=len(first),
        expected=len(sent) * agents,
        doubled=doubled,
        p50_ms=percentile(latencies, 50),
        p99_ms=percentile(latencies, 99),
        max_ms=max(latencies, default=math.nan),
        throughput=len(first) / agents / (end - start) if end > start else 0.0,
        cpu_us_per_event=cpu_s / events * 1e6 if events else math.nan,
        rss_mb=rss,
    )


async def paced(rate: float, duration: float, send: Callable[[int], Awaitable[None]]) -> float:
    """Call `send(i)` open loop at `rate` per second for `duration` seconds, each at its own
    time whatever the ones before cost (a late one goes at once); returns the last send's time."""
    count = max(1, round(rate * duration))
    start = time.monotonic()
    for i in range(count):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        await send(i)
    return time.monotonic()


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of one process (not its children) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def rss_mb(pid: int) -> float:
    """Resident memory of one process now, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan
