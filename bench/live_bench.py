"""The live path against the bare platform library, on the project's own fake Slack and Discord.

    python bench/live_bench.py [--rates 100,200,500,1000] [--seconds 10] [--platforms slack,discord]

For each platform, `c2a run` runs as its own process on a workspace of three agents (one bot
each), every agent's harness a recorder that acknowledges each `chat/deliver` and never answers
(`bench/live_recorder.py`). The driver, with the fake server in it, writes open-loop load over
ten channels at each fixed rate: every message goes to each bot's connection, mentioning the
agents in turn. Then the bare library (`bench/live_bare.py`: three slack-bolt apps, or three
discord.py clients, that only note each message) takes the same load, in the same run.

Latency is from the fake server's first websocket write of a message to each agent's harness
receiving its `chat/deliver` (the bare library: its handler being called), CLOCK_MONOTONIC on
both sides. Printed for each side and rate: p50, p99 and max latency, sustained throughput
(messages from the first write to the last arrival), CPU per platform event and RSS of the
process under test (not its harnesses), what arrived of what was expected, and the ratios.
`--code DIR` runs `c2a run` from another checkout (the code before a change, say);
`--profile FILE` runs it under cProfile (`FILE.<platform>.<suffix>`, for `pstats`);
`--ledger FILE` starts it over a copy of a SQLite ledger (a grown one: `bench/big_ledger.py`).
Asserts nothing: the figures go to docs/benchmarks.md, with `uptime` beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_load import Figures, cpu_seconds, paced, read_receipts, rss_mb, summarise
from live_platforms import AGENTS, ROOT, DiscordLoad, PlatformLoad, SlackLoad

HERE = Path(__file__).resolve().parent
WARMUP = 30  # messages sent slowly first: connections, harnesses and caches settle
SETTLE_S = 10.0  # a phase ends when nothing more arrived for this long (a saturated host
# takes events in before it delivers: its deliveries can pause for seconds)
CONNECT_S = 60.0
STOP_S = 3.0
PROFILE: Path | None = None  # --profile: c2a run under cProfile, its stats written here
LEDGER: Path | None = None  # --ledger: c2a run starts over a copy of this SQLite ledger


@dataclass
class Side:
    """The process under test and where its receipts land."""

    name: str
    process: subprocess.Popen[bytes]
    outputs: list[Path]
    stop_s: float = STOP_S  # a profiled process writes its profile on the way out

    def arrived(self, sent: dict[str, float]) -> int:
        """How many (agent, message) pairs of `sent` have arrived; other deliveries (the
        reactions Discord sends back for the host's own `seen` signals) are not counted."""
        return len({(r.agent, r.key) for r in read_receipts(self.outputs) if r.key in sent})

    def stop(self) -> None:
        """Ask it to stop, and kill it after a moment: its figures are taken already."""
        if self.process.poll() is None:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(self.stop_s)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def start_product(load: PlatformLoad, work: Path, code: Path = ROOT) -> Side:
    """`c2a run` on a manifest of three agents with recorder harnesses."""
    outputs = [work / f"product-{agent}.txt" for agent in AGENTS]
    agents: dict[str, Any] = {}
    for agent, out in zip(AGENTS, outputs, strict=True):
        command = [sys.executable, str(HERE / "live_recorder.py"), str(out), agent]
        agents[agent] = {load.name: load.agent_section(agent)}
        agents[agent]["harness"] = {"backend": "stdio", "command": command}
    agents[AGENTS[0]]["lead"] = True
    manifest = {
        "version": 1,
        "workspace": f"bench{load.name}",
        load.name: load.manifest_section(),
        "agents": agents,
    }
    path = work / f"{load.name}.yaml"
    path.write_text(yaml.safe_dump(manifest))
    command = [sys.executable, "-m", "c2a.cli", "run", "--manifest", str(path)]
    command += ["--data-dir", str(work / "data")]
    if LEDGER is not None:  # a ledger grown by a long life (`bench/big_ledger.py`)
        (work / "data").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(LEDGER, work / "data" / f"{manifest['workspace']}.sqlite3")
    if PROFILE is not None:
        profile = PROFILE.with_suffix(f".{load.name}{PROFILE.suffix}")
        command[1:1] = ["-m", "cProfile", "-o", str(profile)]
    process = _spawn(command, load.environment(), work / "product.log", code)
    return Side("c2a", process, outputs, 60.0 if PROFILE else STOP_S)


def start_bare(load: PlatformLoad, work: Path) -> Side:
    config = work / f"bare-{load.name}.json"
    config.write_text(json.dumps(load.bare_config()))
    out = work / f"bare-{load.name}.txt"
    command = [sys.executable, str(HERE / "live_bare.py"), str(config), str(out)]
    return Side("bare", _spawn(command, {}, work / "bare.log"), [out])


def _spawn(
    command: list[str], extra: dict[str, str], log: Path, code: Path = ROOT
) -> subprocess.Popen[bytes]:
    env = {**os.environ, **extra, "PYTHONPATH": str(code)}
    with log.open("ab") as sink:
        return subprocess.Popen(
            command, cwd=code, env=env, stdin=subprocess.PIPE, stdout=sink, stderr=sink
        )


async def settle(count: Callable[[], int], target: int, cap: float, stall: float) -> None:
    """Wait until `count()` reaches `target`, or stops growing for `stall` seconds, or `cap`
    seconds pass."""
    deadline = time.monotonic() + cap
    last, still_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        now = count()
        if now >= target:
            return
        if now != last:
            last, still_since = now, time.monotonic()
        elif time.monotonic() - still_since > stall:
            return
        await asyncio.sleep(0.5)


async def phase(
    load: PlatformLoad, side: Side, rate: float, seconds: float, stall: float
) -> Figures:
    """One rate on one side: the load, then waiting for what it sent to arrive."""
    sent: dict[str, float] = {}

    async def send(i: int) -> None:
        key, at = await load.send(phase.counter + i)
        sent[key] = at

    pid = side.process.pid
    cpu_before = cpu_seconds(pid)
    last_send = await paced(rate, seconds, send)
    phase.counter += len(sent)
    target = len(sent) * len(AGENTS)
    await settle(lambda: side.arrived(sent), target, seconds * 3 + CONNECT_S, stall)
    cpu = cpu_seconds(pid) - cpu_before
    return summarise(
        sent,
        read_receipts(side.outputs),
        agents=len(AGENTS),
        events_per_message=load.events_per_message,
        cpu_s=cpu,
        rss=rss_mb(pid),
        last_send=last_send,
    )


phase.counter = 0  # type: ignore[attr-defined]


async def run_side(
    load: PlatformLoad, side: Side, rates: list[float], seconds: float
) -> dict[float, Figures]:
    try:
        await load.connected(CONNECT_S)
        # The harnesses start beside the connections: the warm-up waits for all of it.
        warm = await phase(load, side, 20, WARMUP / 20, CONNECT_S)
        if warm.received < warm.expected:
            print(f"  {load.name} {side.name}: warm-up got {warm.received}/{warm.expected}")
        return {rate: await phase(load, side, rate, seconds, SETTLE_S) for rate in rates}
    finally:
        side.stop()


async def bench_platform(
    load: PlatformLoad, rates: list[float], seconds: float, work: Path, code: Path
) -> dict[str, dict[float, Figures]]:
    async with load:
        load.fresh()
        product = await run_side(load, start_product(load, work, code), rates, seconds)
        load.fresh()
        bare = await run_side(load, start_bare(load, work), rates, seconds)
    return {"c2a": product, "bare": bare}


def table(platform: str, results: dict[str, dict[float, Figures]]) -> list[str]:
    lines = [
        f"{platform}: rate | side | p50 / p99 / max ms | msgs/s sustained | CPU us/event | "
        "RSS MB | arrived",
    ]
    for rate, mine in results["c2a"].items():
        bare = results["bare"][rate]
        for name, f in (("c2a", mine), ("bare", bare)):
            lines.append(
                f"  {rate:>6.0f} | {name:4} | {f.p50_ms:7.2f} / {f.p99_ms:7.2f} / {f.max_ms:7.1f}"
                f" | {f.throughput:7.0f} (offered {f.offered:5.0f}) | {f.cpu_us_per_event:6.0f}"
                f" | {f.rss_mb:5.0f} | {f.received}/{f.expected}"
                + (f" doubled {f.doubled}" if f.doubled else "")
            )
        lines.append(
            f"  {rate:>6.0f} | c2a/bare: p50 +{mine.p50_ms - bare.p50_ms:.2f} ms, "
            f"p99 +{mine.p99_ms - bare.p99_ms:.2f} ms, CPU x{_ratio(mine, bare):.2f}, "
            f"RSS x{mine.rss_mb / bare.rss_mb:.2f}"
        )
    return lines


def _ratio(mine: Figures, bare: Figures) -> float:
    if not bare.cpu_us_per_event:
        return math.nan
    return mine.cpu_us_per_event / bare.cpu_us_per_event


async def main(
    rates: list[float], seconds: float, platforms: list[str], code: Path = ROOT
) -> list[str]:
    loads: dict[str, Callable[[], PlatformLoad]] = {"slack": SlackLoad, "discord": DiscordLoad}
    lines = [f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"]
    with tempfile.TemporaryDirectory(prefix="c2a-live-bench-") as folder:
        for name in platforms:
            work = Path(folder) / name
            work.mkdir()
            results = await bench_platform(loads[name](), rates, seconds, work, code)
            lines += table(name, results)
            print("\n".join(table(name, results)), flush=True)
    return lines


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rates", default="100,200,500,1000")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--platforms", default="slack,discord")
    parser.add_argument(
        "--profile", type=Path, help="profile c2a run (cProfile) to FILE.<platform>.<suffix>"
    )
    parser.add_argument(
        "--ledger",
        type=Path,
        help="start c2a run over a copy of this SQLite ledger (one `bench/big_ledger.py` built)",
    )
    parser.add_argument(
        "--code",
        type=Path,
        default=ROOT,
        help="run c2a from this checkout (the code before a change)",
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    PROFILE = args.profile
    LEDGER = args.ledger
    if LEDGER is not None:  # the start folds the whole ledger before it connects
        CONNECT_S = 300.0
    asyncio.run(main(rates, args.seconds, args.platforms.split(","), args.code.resolve()))
