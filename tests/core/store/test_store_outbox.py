"""The `OutboxStore` contract: one action per idempotency key, sent in queue order, with every
`sending` counted, and what was in flight at a crash marked ambiguous."""

from __future__ import annotations

from store_backends import Backend

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
