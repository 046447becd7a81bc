"""Each agent's harness runs in one process: `HarnessLeases` starts a harness only once its
process holds the agent's lease, stops it as soon as the lease cannot be renewed, and another
process takes the lease once it expires (or at once when it is released). Two ledger
connections on one file stand in for two processes; the time is passed in."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from c2a.run_leases import LEASE_TTL_MS, HarnessLeases, harness_leases, holder_name
from core.clock import VirtualClock, parse_time
from core.sqlite_store import SQLiteStore


class Process:
    """One process's leases, with the harnesses it runs."""

    def __init__(self, path: Path, holder: str, clock: VirtualClock, agents: list[str]) -> None:
        self.running: set[str] = set()
        self.events: list[str] = []
        self.agents = agents
        self.leases = HarnessLeases(
            "acme",
            SQLiteStore(str(path)),
            holder,
            self.agents,
            self.start,
            self.stop,
            now=clock.now,
        )

    def start(self, agent: str) -> None:
        self.running.add(agent)
        self.events.append(f"start {agent}")

    async def stop(self, agent: str) -> None:
        self.running.discard(agent)
        self.events.append(f"stop {agent}")


def two(tmp_path: Path) -> tuple[VirtualClock, Process, Process]:
    clock = VirtualClock(parse_time("2026-01-01T00:00:00Z"))
    path = tmp_path / "ledger.sqlite3"
    agents = ["lead", "worker"]
    return clock, Process(path, "a", clock, agents), Process(path, "b", clock, list(agents))


def test_one_process_runs_each_harness_and_the_other_takes_over_after_expiry(
    tmp_path: Path,
) -> None:
    clock, a, b = two(tmp_path)

    async def scenario() -> None:
        await a.leases.begin()
        await b.leases.begin()
        assert (a.running, b.running) == ({"lead", "worker"}, set())
        for _ in range(5):  # renewed well inside the lease time: nothing moves
            clock.advance(timedelta(seconds=5))
            await a.leases.round()
            await b.leases.round()
        assert (a.running, b.running) == ({"lead", "worker"}, set())
        # `a` stops renewing (killed): `b` waits for the lease to expire, then takes it.
        clock.advance(timedelta(milliseconds=LEASE_TTL_MS - 1))
        await b.leases.round()
        assert b.running == set()
        clock.advance(timedelta(milliseconds=1))
        await b.leases.round()
        assert b.running == {"lead", "worker"}
        # `a` comes back: its renewal is refused and its harnesses stop.
        await a.leases.round()
        assert a.running == set()
        assert a.events == ["start lead", "start worker", "stop lead", "stop worker"]
        leases = await b.leases.leases.holders(clock.now())
        held = {lease.name: lease.holder for lease in leases}
        assert held == {"agent:lead": "b", "agent:worker": "b", "host:a": "a", "host:b": "b"}
        await a.leases.end()
        await b.leases.end()

    asyncio.run(scenario())


def test_a_process_waiting_for_a_lease_comes_back_as_it_expires_not_a_round_later(
    tmp_path: Path,
) -> None:
    clock, a, b = two(tmp_path)

    async def scenario() -> list[float]:
        await a.leases.begin()
        await b.leases.begin()
        waits = [await a.leases.until_next(5.0), await b.leases.until_next(5.0)]
        clock.advance(timedelta(milliseconds=LEASE_TTL_MS - 2_000))  # `a` has stopped renewing
        waits.append(await b.leases.until_next(5.0))
        clock.advance(timedelta(seconds=2))
        await b.leases.round()
        waits.append(await b.leases.until_next(5.0))  # it holds everything it wants
        await a.leases.end()
        await b.leases.end()
        return waits

    holder, waiting, near_expiry, after = asyncio.run(scenario())
    assert holder == 5.0 and waiting == 5.0  # `a` wants nothing; `b`'s wait is 15 s off
    assert near_expiry == 2.2  # the expiry, and a little more
    assert after == 5.0


def test_a_released_lease_moves_at_once(tmp_path: Path) -> None:
    _, a, b = two(tmp_path)

    async def scenario() -> list[str]:
        await a.leases.begin()
        await b.leases.begin()
        await a.leases.end()  # a rolling restart: `a` stops and gives its leases up
        await b.leases.round()
        names = b.leases.names()
        await b.leases.end()
        return names

    assert asyncio.run(scenario()) == ["host:b", "agent:lead", "agent:worker"]
    assert b.running == {"lead", "worker"}


def test_a_renewal_the_ledger_does_not_answer_stops_the_harness(tmp_path: Path) -> None:
    clock, a, _ = two(tmp_path)

    async def scenario() -> None:
        await a.leases.begin()
        await a.leases.leases.close()  # the ledger is unreachable
        clock.advance(timedelta(seconds=5))
        await a.leases.round()

    asyncio.run(scenario())
    assert a.running == set()
    assert a.leases.held == set()


def test_an_agent_gone_from_the_manifest_gives_its_lease_up(tmp_path: Path) -> None:
    _, a, b = two(tmp_path)

    async def scenario() -> set[str]:
        await a.leases.begin()
        a.agents.remove("worker")
        await a.leases.round()
        await b.leases.begin()
        held = set(b.leases.held)
        await a.leases.end()
        await b.leases.end()
        return held

    assert asyncio.run(scenario()) == {"worker"}
    assert a.leases.held == set()


class Run:
    name = "acme"
    harnesses: dict[str, object] = {}

    def run_harness(self, agent: str) -> None:
        return None

    async def halt_harness(self, agent: str) -> None:
        return None


def test_leases_are_kept_only_for_a_postgresql_ledger() -> None:
    def made(url: str | None) -> HarnessLeases | None:
        return harness_leases(url, "here", Run(), print)

    assert made(None) is None
    assert made("sqlite:///tmp/x.sqlite3") is None
    assert made("postgresql://db.example/c2a") is not None
    assert made("postgres://db.example/c2a") is not None
    assert holder_name() != holder_name()
