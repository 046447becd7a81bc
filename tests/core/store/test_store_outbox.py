"""The `OutboxStore` contract: one action per idempotency key, sent in queue order, with every
`sending` counted, and what was in flight at a crash marked ambiguous; on PostgreSQL, each
action taken by one of the processes draining it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from store_backends import Backend, PostgresBackend

from core.store import OutboxEntry, Store

AT = "2026-01-01T00:00:00Z"


def test_an_action_is_queued_once_per_key_and_due_in_queue_order(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        assert await store.put_outbox("k2", "lead", {"text": "first"}, AT)
        assert await store.put_outbox("k1", "worker-1", {"text": "second"}, AT)
        assert not await store.put_outbox("k2", "lead", {"text": "again"}, AT)
        assert await store.outbox_has("k1")
        assert not await store.outbox_has("k3")
        assert await store.outbox_due() == [
            OutboxEntry("k2", "lead", {"text": "first"}, "pending", 0),
            OutboxEntry("k1", "worker-1", {"text": "second"}, "pending", 0),
        ]
        assert [entry.key for entry in await store.outbox_due(limit=1)] == ["k2"]

    backend.run(scenario)


def test_sending_counts_an_attempt_and_a_sent_action_keeps_what_the_platform_said(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> None:
        await store.put_outbox("k1", "lead", {"text": "hi"}, AT)
        await store.outbox_mark("k1", "sending", AT)
        await store.outbox_mark("k1", "pending", AT)
        await store.outbox_mark("k1", "sending", AT)
        await store.outbox_mark("k1", "sent", AT, {"messageId": "m1"})
        await store.outbox_mark("k1", "sent", AT)  # no result: the one kept stays
        assert await store.outbox_get("k1") == OutboxEntry(
            "k1", "lead", {"text": "hi"}, "sent", 2, {"messageId": "m1"}
        )
        assert await store.outbox_get("k2") is None
        assert await store.outbox_due() == []

    backend.run(scenario)


def test_only_an_action_still_due_is_marked_sending(backend: Backend) -> None:
    """An attempt goes only if its row is due: not one never committed, not one sent."""

    async def scenario(store: Store) -> None:
        assert not await store.outbox_mark("k0", "sending", AT)
        await store.put_outbox("k1", "lead", {"text": "hi"}, AT)
        assert await store.outbox_mark("k1", "sending", AT)
        assert not await store.outbox_mark("k1", "sending", AT)
        assert await store.outbox_mark("k1", "sent", AT, {"ts": "1.2"})
        assert not await store.outbox_mark("k1", "sending", AT)
        assert [(e.status, e.attempts) for e in await store.outbox_newest(1)] == [("sent", 1)]

    backend.run(scenario)


def test_the_newest_actions_come_oldest_first_with_their_results(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        for key in ("k1", "k2", "k3"):
            await store.put_outbox(key, "lead", {"text": key}, AT)
        await store.outbox_mark("k3", "sent", AT, {"messageId": "m3"})
        assert await store.outbox_newest(2) == [
            OutboxEntry("k2", "lead", {"text": "k2"}, "pending", 0),
            OutboxEntry("k3", "lead", {"text": "k3"}, "sent", 0, {"messageId": "m3"}),
        ]

    backend.run(scenario)


def test_an_action_left_sending_by_a_crash_is_ambiguous_and_due_again(backend: Backend) -> None:
    async def crash(store: Store) -> None:
        await store.put_outbox("k1", "lead", {"text": "hi"}, AT)
        await store.put_outbox("k2", "lead", {"text": "there"}, AT)
        await store.outbox_mark("k1", "sending", AT)

    async def restart(store: Store) -> list[OutboxEntry]:
        assert await store.outbox_recover(AT) == 1
        assert await store.outbox_recover(AT) == 0
        return await store.outbox_due()

    backend.run(crash)
    assert [(e.key, e.status, e.attempts) for e in backend.run(restart)] == [
        ("k1", "ambiguous", 1),
        ("k2", "pending", 0),
    ]


def test_a_take_hands_out_the_due_actions_in_queue_order(backend: Backend) -> None:
    async def scenario(store: Store) -> list[tuple[str, str]]:
        for key in ("k1", "k2", "k3"):
            await store.put_outbox(key, "lead", {"text": key}, AT)
        await store.outbox_mark("k2", "sent", AT)
        await store.outbox_mark("k3", "ambiguous", AT)
        return [(entry.key, entry.status) for entry in await store.outbox_take("host-a")]

    assert backend.run(scenario) == [("k1", "pending"), ("k3", "ambiguous")]


# Several processes on one PostgreSQL database: each action is taken by one of them.


def shared(request: pytest.FixtureRequest, tmp_path: Path) -> PostgresBackend:
    return PostgresBackend(request, tmp_path)


async def alive(store: Store, holder: str, ttl_ms: int = 60_000) -> None:
    await store.acquire(f"host:{holder}", holder, ttl_ms)


def test_an_action_taken_by_a_live_process_is_not_taken_by_another(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async def scenario(stores: list[Store]) -> tuple[list[str], list[str], list[str]]:
        a, b = stores
        await alive(a, "a")
        await alive(b, "b")
        await a.put_outbox("k1", "lead", {"text": "hi"}, AT)
        taken = [entry.key for entry in await a.outbox_take("a")]
        await a.outbox_mark("k1", "pending", AT)  # a transient failure: `a` tries again
        await a.put_outbox("k2", "lead", {"text": "there"}, AT)
        other = [entry.key for entry in await b.outbox_take("b")]
        again = [entry.key for entry in await a.outbox_take("a")]
        return taken, other, again

    assert shared(request, tmp_path).run_together(2, scenario) == (["k1"], ["k2"], ["k1"])


def test_an_action_a_dead_process_was_sending_comes_back_ambiguous(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async def scenario(stores: list[Store]) -> tuple[list[OutboxEntry], int, list[OutboxEntry]]:
        a, b = stores
        await alive(a, "a", ttl_ms=200)
        await alive(b, "b")
        await a.put_outbox("k1", "lead", {"text": "hi"}, AT)
        await a.outbox_take("a")
        await a.outbox_mark("k1", "sending", AT)  # ... and `a` is killed
        while_alive = await b.outbox_take("b")
        recovered_early = await b.outbox_recover(AT)
        await asyncio.sleep(0.3)  # its lease expires
        return while_alive, recovered_early, await b.outbox_take("b")

    while_alive, recovered_early, taken = shared(request, tmp_path).run_together(2, scenario)
    assert (while_alive, recovered_early) == ([], 0)
    assert [(e.key, e.status, e.attempts) for e in taken] == [("k1", "ambiguous", 1)]


def test_processes_taking_at_once_take_each_action_once(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async def scenario(stores: list[Store]) -> list[list[str]]:
        holders = [f"h{n}" for n in range(len(stores))]
        for store, holder in zip(stores, holders, strict=True):
            await alive(store, holder)
        for n in range(300):
            await stores[0].put_outbox(f"k{n}", "lead", {"text": str(n)}, AT)

        async def drain(store: Store, holder: str) -> list[str]:
            keys: list[str] = []
            while batch := await store.outbox_take(holder, limit=7):
                for entry in batch:
                    keys.append(entry.key)
                    await store.outbox_mark(entry.key, "sent", AT)
            return keys

        return list(await asyncio.gather(*map(drain, stores, holders)))

    taken = shared(request, tmp_path).run_together(3, scenario)
    every = [key for keys in taken for key in keys]
    assert sorted(every) == sorted(f"k{n}" for n in range(300))
    assert all(taken), "each process took a share"
