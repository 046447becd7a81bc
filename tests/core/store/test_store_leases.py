"""The `Leases` contract: one holder per name until its lease expires, renewal only of an
unexpired lease of one's own, release at once, and racing holders from separate connections
(as separate hosts) getting one holder. Expiry follows the time passed in, or the database's
own clock when none is."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from store_backends import Backend, race

from core.clock import parse_time
from core.store import Lease, Store

NOW = parse_time("2026-01-01T00:00:00Z")
TTL_MS = 15_000


def test_a_lease_holds_against_others_until_it_expires(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        taken = await store.acquire("agent:lead", "host-a", TTL_MS, NOW)
        assert taken == Lease("agent:lead", "host-a", NOW + timedelta(milliseconds=TTL_MS))
        soon = NOW + timedelta(seconds=14)
        assert await store.acquire("agent:lead", "host-b", TTL_MS, soon) is None
        again = await store.acquire("agent:lead", "host-a", TTL_MS, NOW + timedelta(seconds=5))
        assert again is not None
        assert again.expires_at == NOW + timedelta(seconds=20)
        expired = NOW + timedelta(seconds=20)
        moved = await store.acquire("agent:lead", "host-b", TTL_MS, expired)
        assert moved == Lease("agent:lead", "host-b", expired + timedelta(milliseconds=TTL_MS))

    backend.run(scenario)


def test_only_the_holder_renews_and_only_before_expiry(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        await store.acquire("agent:lead", "host-a", TTL_MS, NOW)
        assert await store.renew("agent:lead", "host-b", TTL_MS, NOW) is None
        renewed = await store.renew("agent:lead", "host-a", TTL_MS, NOW + timedelta(seconds=10))
        assert renewed == Lease("agent:lead", "host-a", NOW + timedelta(seconds=25))
        # Past its expiry the lease is lost, even though nobody has taken it yet.
        expired = NOW + timedelta(seconds=25)
        assert await store.renew("agent:lead", "host-a", TTL_MS, expired) is None
        assert await store.renew("agent:nobody", "host-a", TTL_MS, NOW) is None

    backend.run(scenario)


def test_a_released_lease_is_free_at_once(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        await store.acquire("agent:lead", "host-a", TTL_MS, NOW)
        assert not await store.release("agent:lead", "host-b")
        assert await store.release("agent:lead", "host-a")
        assert not await store.release("agent:lead", "host-a")
        assert await store.renew("agent:lead", "host-a", TTL_MS, NOW) is None
        assert await store.acquire("agent:lead", "host-b", TTL_MS, NOW) is not None

    backend.run(scenario)


def test_holders_lists_unexpired_leases_and_outlasts_a_restart(backend: Backend) -> None:
    async def write(store: Store) -> None:
        await store.acquire("agent:lead", "host-a", TTL_MS, NOW)
        await store.acquire("agent:worker", "host-b", 1_000, NOW)
        await store.acquire("host:host-a", "host-a", TTL_MS, NOW)

    async def read(store: Store) -> list[Lease]:
        return await store.holders(NOW + timedelta(seconds=2))

    backend.run(write)
    until = NOW + timedelta(milliseconds=TTL_MS)
    assert backend.run(read) == [
        Lease("agent:lead", "host-a", until),
        Lease("host:host-a", "host-a", until),
    ]


def test_without_a_time_the_database_clock_decides(backend: Backend) -> None:
    async def scenario(store: Store) -> tuple[bool, bool, list[str]]:
        assert await store.acquire("agent:lead", "host-a", 200) is not None
        refused = await store.acquire("agent:lead", "host-b", 200) is None
        held = [lease.name for lease in await store.holders()]
        await asyncio.sleep(0.3)
        taken = await store.acquire("agent:lead", "host-b", 200) is not None
        return refused, taken, held

    assert backend.run(scenario) == (True, True, ["agent:lead"])


def test_hosts_racing_from_separate_connections_get_one_holder(backend: Backend) -> None:
    async def scenario(stores: list[Store]) -> dict[str, list[Lease | None]]:
        return await race(
            stores, 3, lambda store, name, host: store.acquire(name, host, TTL_MS, NOW)
        )

    results = backend.run_together(3, scenario)
    assert sorted(results) == ["i0", "i1", "i2"]
    for asked in results.values():
        assert len(asked) == 6
        assert sum(lease is not None for lease in asked) == 1
