"""Which agents' harnesses this process runs, when several `c2a run` processes share one
PostgreSQL ledger: each harness runs only while this process holds the lease `agent:<id>`.

`HarnessLeases.round` renews what this process holds and takes what is free; `run` repeats it
every `RENEW_EVERY` seconds, well inside `LEASE_TTL_MS`, so a live holder never lets a lease
expire. A lease that cannot be renewed (refused, the database unreachable, or no answer within
the period) stops its harness at once: by the time another process may take the lease, this
one has stopped. A process that dies (SIGKILL) simply stops renewing; another takes its leases
once they expire and its harness resumes from the last acknowledged delivery (the ledger's
pending deliveries). The process's own lease `host:<holder>` says it is alive (an outbox row it
took is its own while that lease lives). On SQLite one process owns the ledger and no lease is
kept (`c2a.run`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping
from datetime import datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

from core.postgres.outage import during_outage
from core.store import Lease, Store
from core.store_choice import open_store

__all__ = [
    "LEASE_TTL_MS",
    "RENEW_EVERY",
    "HarnessLeases",
    "Runs",
    "agent_lease",
    "harness_leases",
    "holder_name",
    "host_lease",
]

log = logging.getLogger("c2a.run")

LEASE_TTL_MS = 15_000
RENEW_EVERY = 5.0


def holder_name() -> str:
    """This process's name as a lease holder: its machine, its process id and a few random
    characters (a restarted process with a reused id is still another holder)."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


class Runs(Protocol):
    """What the leases drive: a workspace's run, its harnesses by agent (a reload changes
    them), and how one is started and stopped."""

    @property
    def name(self) -> str: ...

    @property
    def harnesses(self) -> Mapping[str, object]: ...

    def run_harness(self, agent: str) -> None: ...

    async def halt_harness(self, agent: str) -> None: ...


def harness_leases(
    url: str | None, holder: str, run: Runs, heard: Callable[[str], None]
) -> HarnessLeases | None:
    """The leases of `run`'s workspace, whose ledger is at `url`, on a connection of their own
    to it, so a renewal never waits behind (or rolls back with) the ledger's transactions, and
    the ledger's notifications handed to `heard` while they are kept; None on SQLite, which one
    process owns. `holder` names this process (`holder_name`)."""
    if url is None or urlsplit(url).scheme not in ("postgresql", "postgres"):
        return None
    from core.postgres.listen import Listener  # psycopg is needed only for PostgreSQL

    store = open_store(url, "", schema=run.name)
    listener = Listener(url, run.name)
    return HarnessLeases(
        run.name,
        store,
        holder,
        run.harnesses,
        run.run_harness,
        run.halt_harness,
        wake_ups=lambda: listener.run(heard),
    )


def agent_lease(agent: str) -> str:
    """The lease under which one process runs `agent`'s harness."""
    return f"agent:{agent}"


def host_lease(holder: str) -> str:
    """The lease that says the process `holder` is alive."""
    return f"host:{holder}"


class HarnessLeases:
    """The leases of one workspace's (`name`) `agents` (a live collection: the run's harnesses
    by agent, which a reload changes), held as `holder`: `start(agent)` runs a
    harness once its lease is taken, `stop(agent)` ends it once the lease is lost. `now` gives
    the time leases expire by (None: the database's clock); `timeout` bounds each call;
    `wake_ups`, when given, runs while the leases are kept (the ledger's notifications,
    `core.postgres.listen`)."""

    def __init__(
        self,
        name: str,
        leases: Store,
        holder: str,
        agents: Collection[str],
        start: Callable[[str], None],
        stop: Callable[[str], Awaitable[None]],
        *,
        ttl_ms: int = LEASE_TTL_MS,
        timeout: float = RENEW_EVERY,
        now: Callable[[], datetime | None] = lambda: None,
        wake_ups: Callable[[], Coroutine[Any, Any, None]] | None = None,
    ) -> None:
        self.name = name
        self.leases = leases
        self.holder = holder
        self.agents = agents
        self.start = start
        self.stop = stop
        self.ttl_ms = ttl_ms
        self.timeout = timeout
        self.now = now
        self.held: set[str] = set()
        self.wake_ups = wake_ups
        self._waking: asyncio.Task[None] | None = None

    async def round(self) -> None:
        """Renew the host's lease and every agent's held here, stopping the harness of each
        one lost; then take every free agent's lease and start its harness."""
        await self._call(self.leases.acquire, host_lease(self.holder))
        wanted = set(self.agents)
        for agent in sorted(self.held - wanted):  # no longer in the manifest
            self.held.discard(agent)
            await self._call_release(agent_lease(agent))
        for agent in sorted(self.held):
            if await self._call(self.leases.renew, agent_lease(agent)) is None:
                self.held.discard(agent)
                log.warning("%s: lost the lease of %s; its harness stops", self.name, agent)
                await self.stop(agent)
        for agent in sorted(wanted):
            if agent in self.held:
                continue
            if await self._call(self.leases.acquire, agent_lease(agent)) is not None:
                self.held.add(agent)
                log.info("%s: holds the lease of %s as %s", self.name, agent, self.holder)
                self.start(agent)

    async def begin(self) -> None:
        """Connect, take what is free (starting those harnesses) and say what is held."""
        await self.leases.open()
        if self.wake_ups is not None:
            self._waking = asyncio.create_task(self.wake_ups(), name=f"wake-ups-{self.name}")
        await self.round()
        log.info("%s: holds leases %s", self.name, ", ".join(self.names()))

    async def end(self) -> None:
        """Give every lease up (the harnesses are stopped already), so another process takes
        them at once instead of after they expire; then disconnect."""
        if self._waking is not None:
            self._waking.cancel()
            await asyncio.gather(self._waking, return_exceptions=True)
        await self.release()
        await self.leases.close()

    async def run(self, every: float = RENEW_EVERY) -> None:
        """`round` every `every` seconds until cancelled."""
        while True:
            await asyncio.sleep(every)
            await self.round()

    async def release(self) -> None:
        """Give every lease up."""
        for name in [*map(agent_lease, sorted(self.held)), host_lease(self.holder)]:
            await self._call_release(name)
        self.held.clear()

    def names(self) -> list[str]:
        """The leases held here, for the logs and `/metrics`."""
        return [host_lease(self.holder), *map(agent_lease, sorted(self.held))]

    async def _call_release(self, name: str) -> None:
        try:
            await asyncio.wait_for(self.leases.release(name, self.holder), self.timeout)
        except Exception as exc:  # it expires on its own
            log.warning("%s: cannot release the lease %s: %s", self.name, name, exc)

    async def _call(
        self, call: Callable[[str, str, int, datetime | None], Awaitable[Lease | None]], name: str
    ) -> Lease | None:
        """One acquire or renew, bounded by `timeout`; None when it failed (not held)."""
        try:
            return await asyncio.wait_for(
                call(name, self.holder, self.ttl_ms, self.now()), self.timeout
            )
        except Exception as exc:
            said = log.debug if during_outage(exc) else log.warning  # said once already
            said("%s: lease %s: the ledger did not answer: %s", self.name, name, exc)
            return None
