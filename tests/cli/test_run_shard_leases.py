"""Work offered to the run's leases (a Discord shard) runs in one process: `HarnessLeases.offer`
takes a free lease at once and starts the work, the rounds renew it, a lost renewal stops it,
another process takes it once it expires, and `withdraw` stops it and gives it up at once. Two
ledger connections on one file stand in for two processes; the time is passed in."""

from __future__ import annotations

import asyncio
import functools
from datetime import timedelta
from pathlib import Path

from adapters.discord.held_shards import ShardLeases
from c2a.run_leases import LEASE_TTL_MS, HarnessLeases
from core.clock import VirtualClock, parse_time
from core.sqlite_store import SQLiteStore

SHARD = "discord:lead:shard:1"


class Process:
    """One process's leases, with the work it runs (no harnesses)."""

    def __init__(self, path: Path, holder: str, clock: VirtualClock) -> None:
        self.running: set[str] = set()
        self.events: list[str] = []
        self.leases = HarnessLeases(
            "acme", SQLiteStore(str(path)), holder, [], print, self.never, now=clock.now
        )

    async def never(self, agent: str) -> None:
        raise AssertionError(f"no harness to stop: {agent}")

    async def offer(self, name: str) -> None:
        start = functools.partial(self.start, name)
        stop = functools.partial(self.stop, name)
        await self.leases.offer(name, start, stop)

    async def start(self, name: str) -> None:
        self.running.add(name)
        self.events.append(f"start {name}")

    async def stop(self, name: str) -> None:
        self.running.discard(name)
        self.events.append(f"stop {name}")


def two(tmp_path: Path) -> tuple[VirtualClock, Process, Process]:
    clock = VirtualClock(parse_time("2026-01-01T00:00:00Z"))
    path = tmp_path / "ledger.sqlite3"
    return clock, Process(path, "a", clock), Process(path, "b", clock)


def test_an_offered_shard_runs_in_one_process_and_moves_once_its_lease_expires(
    tmp_path: Path,
) -> None:
    clock, a, b = two(tmp_path)

    async def scenario() -> None:
        for process in (a, b):
            await process.leases.begin()
            await process.offer(SHARD)
        assert (a.running, b.running) == ({SHARD}, set())
        assert a.leases.names() == ["host:a", "offers:a", SHARD]
        for _ in range(5):  # renewed well inside the lease time: nothing moves
            clock.advance(timedelta(seconds=5))
            await a.leases.round()
            await b.leases.round()
        assert (a.running, b.running) == ({SHARD}, set())
        # `a` stops renewing (killed): `b` waits for the lease to expire, then takes it.
        clock.advance(timedelta(milliseconds=LEASE_TTL_MS - 1))
        await b.leases.round()
        assert b.running == set()
        clock.advance(timedelta(milliseconds=1))
        await b.leases.round()
        assert b.running == {SHARD}
        # `a` comes back: its renewal is refused and the shard stops there.
        await a.leases.round()
        assert a.running == set()
        assert a.events == [f"start {SHARD}", f"stop {SHARD}"]
        assert a.leases.names() == ["host:a", "offers:a"]
        held = {lease.name: lease.holder for lease in await b.leases.leases.holders(clock.now())}
        assert held == {SHARD: "b", "host:a": "a", "host:b": "b", "offers:a": "a", "offers:b": "b"}
        await a.leases.end()
        await b.leases.end()

    asyncio.run(scenario())


def test_a_withdrawn_shard_stops_and_moves_at_the_next_round(tmp_path: Path) -> None:
    _, a, b = two(tmp_path)

    async def scenario() -> None:
        for process in (a, b):
            await process.leases.begin()
            await process.offer(SHARD)
        await a.leases.withdraw(SHARD)  # a graceful stop closes the shard, then gives it up
        assert a.events == [f"start {SHARD}", f"stop {SHARD}"]
        await a.leases.round()  # withdrawn: never taken again here
        await b.leases.round()
        assert (a.running, b.running) == (set(), {SHARD})
        await a.leases.end()
        await b.leases.end()

    asyncio.run(scenario())


def test_a_shard_whose_renewal_the_ledger_does_not_answer_stops(tmp_path: Path) -> None:
    clock, a, _ = two(tmp_path)

    async def scenario() -> None:
        await a.leases.begin()
        await a.offer(SHARD)
        await a.leases.leases.close()  # the ledger is unreachable
        clock.advance(timedelta(seconds=5))
        await a.leases.round()

    asyncio.run(scenario())
    assert a.running == set()
    assert a.leases.names() == ["host:a", "offers:a"]


def test_the_shards_are_split_evenly_and_a_dead_processs_share_moves(tmp_path: Path) -> None:
    clock, a, b = two(tmp_path)
    shards = [f"discord:lead:shard:{n}" for n in range(3)]

    async def scenario() -> None:
        await a.leases.begin()
        for shard in shards:  # alone, `a` takes them all
            await a.offer(shard)
        await b.leases.begin()
        for shard in shards:  # none is free
            await b.offer(shard)
        assert (len(a.running), b.running) == (3, set())
        await a.leases.round()  # two processes offer: `a`'s share is 2 of 3; it gives one up
        await b.leases.round()
        assert (a.running, b.running) == (set(shards[:2]), {shards[2]})
        for _ in range(3):  # shares held: nothing moves
            clock.advance(timedelta(seconds=5))
            await a.leases.round()
            await b.leases.round()
        assert (a.running, b.running) == (set(shards[:2]), {shards[2]})
        assert a.events == [*(f"start {s}" for s in shards), f"stop {shards[2]}"]
        # `b` stops renewing (killed): once its leases expire `a` takes its shard back.
        for _ in range(LEASE_TTL_MS // 5000):
            clock.advance(timedelta(seconds=5))
            await a.leases.round()
        assert a.running == set(shards)
        assert a.events[-2:] == [f"stop {shards[2]}", f"start {shards[2]}"]
        await a.leases.end()
        await b.leases.end()

    asyncio.run(scenario())


def test_the_run_leases_are_what_the_shards_are_offered_to(tmp_path: Path) -> None:
    _, a, _ = two(tmp_path)
    leases: ShardLeases = a.leases  # checked by mypy: the adapter's port, structurally
    assert leases is a.leases
