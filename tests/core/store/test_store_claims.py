"""The `Claims` contract: one holder per item until its claim expires, and racing claims give
one holder, also when they race from separate connections to one database."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from store_backends import Backend, race

from core.clock import parse_time
from core.store import ClaimResult, Store

NOW = parse_time("2026-01-01T00:00:00Z")
TTL_MS = 60_000


def test_a_claim_holds_against_others_until_it_expires(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        until = NOW + timedelta(milliseconds=TTL_MS)
        assert await store.claim("e1", "lead", NOW, TTL_MS) == ClaimResult(True, "lead", until)
        later = NOW + timedelta(seconds=30)
        assert await store.claim("e1", "worker-1", later, TTL_MS) == ClaimResult(
            False, "lead", until
        )
        renewed = later + timedelta(milliseconds=TTL_MS)
        assert await store.claim("e1", "lead", later, TTL_MS) == ClaimResult(True, "lead", renewed)
        expired = renewed + timedelta(seconds=1)
        taken = await store.claim("e1", "worker-1", expired, TTL_MS)
        assert (taken.granted, taken.holder) == (True, "worker-1")

    backend.run(scenario)


def test_claims_lists_only_unexpired_claims_and_outlasts_a_restart(backend: Backend) -> None:
    async def write(store: Store) -> None:
        await store.claim("e1", "lead", NOW, TTL_MS)
        await store.claim("e2", "worker-1", NOW, 1_000)

    async def read(store: Store) -> dict[str, tuple[str, object]]:
        return dict(await store.claims(NOW + timedelta(seconds=2)))

    backend.run(write)
    assert backend.run(read) == {"e1": ("lead", NOW + timedelta(milliseconds=TTL_MS))}


def test_a_claim_is_handed_over_only_by_its_holder(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        await store.claim("e1", "worker-1", NOW, TTL_MS)
        later = NOW + timedelta(seconds=5)
        assert not await store.hand_over("e1", "worker-2", "lead", later, TTL_MS)
        assert not await store.hand_over("e2", "worker-1", "lead", later, TTL_MS)  # nobody's
        assert await store.hand_over("e1", "worker-1", "worker-2", later, TTL_MS)
        until = later + timedelta(milliseconds=TTL_MS)
        assert await store.claims(later) == {"e1": ("worker-2", until)}
        assert not await store.hand_over("e1", "worker-1", "lead", later, TTL_MS)  # not now

    backend.run(scenario)


def test_racing_claims_give_one_holder(backend: Backend) -> None:
    async def scenario(store: Store) -> list[ClaimResult]:
        agents = [f"worker-{n}" for n in range(8)]
        return list(await asyncio.gather(*(store.claim("e1", a, NOW, TTL_MS) for a in agents)))

    results = backend.run(scenario)
    assert sum(result.granted for result in results) == 1
    assert len({result.holder for result in results}) == 1


def test_claims_racing_from_separate_connections_give_one_holder(backend: Backend) -> None:
    async def scenario(stores: list[Store]) -> dict[str, list[ClaimResult]]:
        return await race(
            stores, 3, lambda store, item, agent: store.claim(item, agent, NOW, TTL_MS)
        )

    results = backend.run_together(3, scenario)
    assert sorted(results) == ["i0", "i1", "i2"]
    for asked in results.values():
        assert len(asked) == 6
        assert sum(result.granted for result in asked) == 1
        assert len({result.holder for result in asked}) == 1
