"""A queued action is handed to its sender once the transaction that queued it commits, with no
poll interval passing; never before that commit."""

from __future__ import annotations

import asyncio
from typing import Any

from core.action_records import to_record
from core.actions import Action, Post
from core.clock import VirtualClock, parse_time
from core.outbox import Outbox, QueueBell
from core.sqlite_store import SQLiteStore

AT = "2026-01-01T00:00:00Z"
A_DAY = 86_400.0  # the fallback poll: far longer than any test waits


def reply(key: str) -> Post:
    return Post(agent="lead", platform="slack", conversation="C0GEN", key=key, text="on it")


class RecordingSender:
    def __init__(self) -> None:
        self.sent: list[str] = []
        self.landed = asyncio.Event()

    async def send(self, action: Action) -> dict[str, Any]:
        self.sent.append(action.key)
        self.landed.set()
        return {"messageId": f"m{len(self.sent)}"}

    async def find(self, action: Action) -> dict[str, Any] | None:
        return None


async def started() -> tuple[SQLiteStore, QueueBell, RecordingSender, asyncio.Task[None]]:
    store = SQLiteStore()
    await store.open()
    bell = QueueBell(store)
    sender = RecordingSender()
    outbox = Outbox(store, VirtualClock(parse_time(AT)), {"slack": sender}, due=bell.due)
    loop = asyncio.create_task(outbox.run(A_DAY, lambda: False))
    await asyncio.sleep(0)  # the first (empty) round
    return store, bell, sender, loop


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def landed_and_stopped(
    store: SQLiteStore, sender: RecordingSender, loop: asyncio.Task[None]
) -> list[str]:
    """What the sender got, once it got something (bounded); the loop and ledger closed."""
    async with asyncio.timeout(5):
        await sender.landed.wait()
    loop.cancel()
    await store.close()
    return sender.sent


def test_a_committed_reply_reaches_the_sender_with_no_poll_interval_passing() -> None:
    async def go() -> None:
        store, bell, sender, loop = await started()
        async with bell.transaction():
            await bell.put_outbox("k1", "lead", to_record(reply("k1")), AT)
            await settle()
            assert sender.sent == []  # not before its commit
        assert await landed_and_stopped(store, sender, loop) == ["k1"]

    asyncio.run(go())


def test_a_nested_block_rings_only_when_the_outermost_one_ends() -> None:
    async def go() -> None:
        store, bell, sender, loop = await started()
        async with bell.transaction():
            async with bell.transaction():
                await bell.put_outbox("k1", "lead", to_record(reply("k1")), AT)
            assert not bell.due.is_set()
            await settle()
            assert sender.sent == []
        assert await landed_and_stopped(store, sender, loop) == ["k1"]

    asyncio.run(go())


def test_a_key_already_queued_does_not_ring() -> None:
    async def go() -> None:
        store, bell, _, loop = await started()
        loop.cancel()
        async with bell.transaction():
            assert await bell.put_outbox("k1", "lead", to_record(reply("k1")), AT)
        bell.due.clear()
        async with bell.transaction():
            assert not await bell.put_outbox("k1", "lead", to_record(reply("k1")), AT)
        assert not bell.due.is_set()
        await store.close()

    asyncio.run(go())


def test_everything_else_is_the_ledgers_own() -> None:
    async def go() -> None:
        store = SQLiteStore()
        await store.open()
        bell = QueueBell(store)
        await bell.put_outbox("k1", "lead", to_record(reply("k1")), AT)
        assert bell.due.is_set()  # outside a transaction: committed at once
        assert [entry.key for entry in await bell.outbox_due()] == ["k1"]
        await store.close()

    asyncio.run(go())
