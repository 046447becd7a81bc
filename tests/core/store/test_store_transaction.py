"""The `Store` as a whole: what one transaction writes across its parts commits together or not
at all, a nested block joins the outer one, and a committed write outlives a restart."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from store_backends import Backend

from core.clock import parse_time
from core.errors import StoreError
from core.sqlite_store import SQLiteStore
from core.store import Store

AT = "2026-01-01T00:00:00Z"
NOW = parse_time(AT)


async def write_one_of_each(store: Store, event_id: str) -> None:
    """An event, its receipt, a claim and an outbound action: what ingesting one event writes."""
    await store.append(event_id, "message", "human:u", {"text": event_id}, AT)
    await store.add_receipt(event_id, "lead")
    await store.claim(event_id, "lead", NOW, 60_000)
    await store.put_outbox(f"{event_id}:out", "lead", {"text": "hi"}, AT)


async def kept(store: Store, event_id: str) -> tuple[bool, bool, bool, bool]:
    """Whether each of `write_one_of_each`'s writes is there."""
    return (
        await store.sequence_of(event_id) is not None,
        await store.receipts(event_id) == ["lead"],
        event_id in await store.claims(NOW),
        await store.outbox_has(f"{event_id}:out"),
    )


def test_a_transaction_commits_all_its_parts_together_and_a_restart_finds_them(
    backend: Backend,
) -> None:
    async def write(store: Store) -> None:
        async with store.transaction():
            await write_one_of_each(store, "e1")
            async with store.transaction():  # joins the outer one
                await write_one_of_each(store, "e2")

    async def read(store: Store) -> list[tuple[bool, bool, bool, bool]]:
        return [await kept(store, "e1"), await kept(store, "e2")]

    backend.run(write)
    assert backend.run(read) == [(True, True, True, True)] * 2


def test_a_transaction_that_raises_keeps_none_of_its_parts(backend: Backend) -> None:
    async def scenario(store: Store) -> tuple[bool, bool, bool, bool]:
        async def fail_inside() -> None:
            async with store.transaction():
                await write_one_of_each(store, "e1")
                async with store.transaction():
                    raise RuntimeError("a nested block fails the whole transaction")

        with pytest.raises(RuntimeError):
            await fail_inside()
        return await kept(store, "e1")

    assert backend.run(scenario) == (False, False, False, False)


def test_a_closed_store_refuses_to_be_used() -> None:
    async def scenario() -> None:
        store = SQLiteStore()
        await store.open()
        await store.close()
        await store.close()  # closing twice does nothing
        with pytest.raises(StoreError, match="not open"):
            await store.append("e1", "message", "human:u", {}, AT)

    asyncio.run(scenario())


def test_a_block_of_another_task_that_outlives_the_one_it_joined_leaves_the_next_whole(
    backend: Backend,
) -> None:
    """A task's block joins the transaction another task opened and ends after it: the next
    transaction is a transaction still, its writes kept or dropped together."""

    async def scenario(store: Store) -> list[int | None]:
        joined, release = asyncio.Event(), asyncio.Event()

        async def outer() -> None:
            async with store.transaction():
                await joined.wait()

        async def late() -> None:
            async with store.transaction():
                joined.set()
                await release.wait()

        first = asyncio.create_task(outer())
        await asyncio.sleep(0)
        second = asyncio.create_task(late())
        await first
        release.set()
        await second
        with contextlib.suppress(RuntimeError):
            async with store.transaction():
                await store.append("kept-not", "message", "x", {}, "t")
                raise RuntimeError("dropped")
        return [await store.sequence_of("kept-not")]

    assert backend.run(scenario) == [None]
