"""Which agents' harnesses this process runs, when several `c2a run` processes share one
PostgreSQL ledger: each harness runs only while this process holds the lease `agent:<id>`.

`HarnessLeases.round` renews what this process holds and takes what is free; `run` repeats it
every `RENEW_EVERY` seconds, well inside `LEASE_TTL_MS`, so a live holder never lets a lease
expire, and sooner when a lease it wants is about to expire, so a dead holder's lease is taken
within the lease time. A lease that cannot be renewed (refused, the database unreachable, or
no answer within the period) stops its harness at once: by the time another process may take
the lease, this one has stopped. A process that dies (SIGKILL) simply stops renewing; another
takes its leases once they expire and its harness resumes from the last acknowledged delivery
(the ledger's pending deliveries). The process's own lease `host:<holder>` says it is alive (an
outbox row it took is its own while that lease lives). On SQLite one process owns the ledger
and no lease is kept (`c2a.run`).

Other work held one process at a time (a Discord shard's gateway connection) is `offer`ed under
a lease name of its own: the same rounds renew it, stop it when it is lost, and take it when it
is free, each process up to its share: the work offered divided among the processes offering
it (each says so with its lease `offers:<holder>`), rounded up. A process holding more than its
share (it started first, or took over from one that died and came back) stops and gives up the
rest at its next round, and the others take them at theirs. `withdraw` stops it and gives it up
at once (a graceful stop), so another process takes it in its next round.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

from core.postgres.outage import during_outage
from core.store import Lease, Store
from core.store_choice import open_store

__all__ = [
    "LEASE_TTL_MS",
    "RENEW_EVERY",
    "HarnessLeases",
    "Held",
    "Runs",
    "agent_lease",
    "harness_leases",
    "holder_name",
    "host_lease",
    "offers_lease",
]

log = logging.getLogger("c2a.run")

LEASE_TTL_MS = 15_000
RENEW_EVERY = 5.0
# The least wait before a round that takes an expiring lease: a little after its expiry, so a
# clock slightly ahead of the database's does not try over and over just before it.
_SOONEST = 0.2


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


@dataclass(frozen=True, slots=True)
class Held:
    """Work other than a harness that runs while its lease is held: `start` once it is taken,
    `stop` once it is lost or withdrawn."""

    start: Callable[[], Awaitable[None]]
    stop: Callable[[], Awaitable[None]]


def offers_lease(holder: str) -> str:
    """The lease that says the process `holder` takes its share of the work offered."""
    return f"offers:{holder}"


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
        self.offered: dict[str, Held] = {}  # other work, by lease name
        self.others: set[str] = set()  # the offered leases held here
        self.wake_ups = wake_ups
        self._waking: asyncio.Task[None] | None = None
        self._turn = asyncio.Lock()  # one round, offer or withdrawal at a time

    async def round(self) -> None:
        """Renew the host's lease and every agent's held here, stopping the harness of each
        one lost; then take every free agent's lease and start its harness; then the same for
        the other work offered, up to this process's share of it."""
        async with self._turn:
            await self._agents_round()
            await self._others_round()

    async def offer(
        self, name: str, start: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None]]
    ) -> None:
        """Run work while this process holds the lease `name` (`start` once taken, now if it is
        free and within this process's share, else in a later round once it is; `stop` once
        lost, given up to another process or withdrawn)."""
        async with self._turn:
            self.offered[name] = Held(start, stop)
            await self._call(self.leases.acquire, offers_lease(self.holder))
            if name not in self.others and len(self.others) < await self._share():
                await self._take_other(name)

    async def withdraw(self, name: str) -> None:
        """Stop the work offered as `name` (if it runs here) and give its lease up at once."""
        async with self._turn:
            work = self.offered.pop(name, None)
            if not self.offered:
                await self._call_release(offers_lease(self.holder))
            if work is not None and name in self.others:
                await work.stop()  # before another process may take it
                await self._give_up(name)

    async def _others_round(self) -> None:
        """Renew the offered leases held here; give up those beyond this process's share, or
        take free ones up to it."""
        if not self.offered:
            return
        await self._call(self.leases.acquire, offers_lease(self.holder))
        for name in sorted(self.others):
            if await self._call(self.leases.renew, name) is None:
                self.others.discard(name)
                log.warning("%s: lost the lease %s; it stops here", self.name, name)
                await self.offered[name].stop()
        share = await self._share()
        for name in sorted(self.others)[share:]:  # another process has fewer: it takes them
            await self.offered[name].stop()
            await self._give_up(name)
        for name in sorted(self.offered.keys() - self.others):
            if len(self.others) >= share:
                break
            await self._take_other(name)

    async def _share(self) -> int:
        """The most offered leases this process holds: an equal share, rounded up, among the
        processes offering work (each holds `offers:<holder>`); what it holds when the ledger
        does not answer."""
        leases = await self._holders(said=False)
        if leases is None:
            return len(self.others)
        offering = sum(lease.name.startswith(offers_lease("")) for lease in leases)
        return math.ceil(len(self.offered) / max(offering, 1))

    async def _holders(self, *, said: bool) -> list[Lease] | None:
        """The leases held now, or None when the ledger does not answer (logged unless `said`
        already)."""
        try:
            return await asyncio.wait_for(self.leases.holders(self.now()), self.timeout)
        except Exception as exc:
            if not said:
                log.warning("%s: cannot read the leases: %s", self.name, exc)
            return None

    async def _give_up(self, name: str) -> None:
        self.others.discard(name)
        await self._call_release(name)
        log.info("%s: gave up the lease %s", self.name, name)

    async def _take_other(self, name: str) -> None:
        if await self._call(self.leases.acquire, name) is None:
            return
        self.others.add(name)
        log.info("%s: holds the lease %s as %s", self.name, name, self.holder)
        await self.offered[name].start()

    async def _agents_round(self) -> None:
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
        """`round` every `every` seconds until cancelled, and sooner when a lease this process
        wants expires before then (`until_next`)."""
        wait = every
        while True:
            await asyncio.sleep(wait)
            await self.round()
            wait = await self.until_next(every)

    async def until_next(self, every: float) -> float:
        """Seconds until the next round: `every`, or less when a lease this process wants (an
        agent's it does not run, other work it does not hold) is held elsewhere and expires
        sooner, so a dead holder's lease is taken as it expires, not up to a round later."""
        wanted = {agent_lease(a) for a in self.agents if a not in self.held}
        wanted |= self.offered.keys() - self.others
        if not wanted:
            return every
        leases = await self._holders(said=True)  # the round itself says what is wrong
        if leases is None:
            return every
        expiring = [lease.expires_at for lease in leases if lease.name in wanted]
        if not expiring:
            return every
        left = (min(expiring) - (self.now() or datetime.now(UTC))).total_seconds()
        return min(every, max(_SOONEST, left + _SOONEST))

    async def release(self) -> None:
        """Give every lease up."""
        agents = map(agent_lease, sorted(self.held))
        offers = offers_lease(self.holder)
        for name in [*agents, *sorted(self.others), offers, host_lease(self.holder)]:
            await self._call_release(name)
        self.held.clear()
        self.others.clear()

    def names(self) -> list[str]:
        """The leases held here, for the logs and `/metrics`."""
        agents = map(agent_lease, sorted(self.held))
        offers = [offers_lease(self.holder)] if self.offered else []
        return [host_lease(self.holder), *agents, *offers, *sorted(self.others)]

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
