"""The `Store` as a whole: what one transaction writes across its parts commits together or not
at all, a nested block joins the outer one, `durable` waits for what is open or ending, and a
committed write outlives a restart."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from store_backends import Backend

from core.clock import parse_time
from core.errors import StoreError
from core.sqlite_store import SQLiteStore
from core.store import Store
from core.store_transaction import Nested

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


Joiner = Callable[[Store, asyncio.Event, list[str]], Awaitable[None]]


async def joins_with_a_block(store: Store, joined: asyncio.Event, steps: list[str]) -> None:
    async with store.transaction():
        await store.append("e2", "message", "human:u", {"text": "e2"}, AT)
        joined.set()
    steps.append("joiner left its block")


async def waits_until_durable(store: Store, joined: asyncio.Event, steps: list[str]) -> None:
    joined.set()
    await store.durable()
    steps.append("durable returned")


async def joined_by_another_task(
    store: Store, *, fail: bool, joiner: Joiner = joins_with_a_block
) -> tuple[list[str], object]:
    """A transaction another task joins while it is open (`joiner`: a block, or a wait for
    what is written to be durable); what happened in which order, and what the joiner raised
    (None when it ended normally)."""
    steps: list[str] = []
    joined = asyncio.Event()
    go_on = asyncio.Event()

    async def owner() -> None:
        async with store.transaction():
            await write_one_of_each(store, "e1")
            await joined.wait()
            await go_on.wait()
            steps.append("owner ends its block")
            if fail:
                raise RuntimeError("the owner's work fails")

    owning = asyncio.create_task(owner())
    await asyncio.sleep(0)  # the owner's transaction is open
    joining = asyncio.create_task(joiner(store, joined, steps))
    await joined.wait()
    for _ in range(5):
        await asyncio.sleep(0)
    assert steps == []  # the joiner is done with its part, but it waits for the commit
    go_on.set()
    outcomes = await asyncio.gather(owning, joining, return_exceptions=True)
    return steps, outcomes[1]


def test_another_tasks_block_that_joins_a_transaction_ends_once_it_has_committed(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> tuple[list[str], object, bool]:
        steps, raised = await joined_by_another_task(store, fail=False)
        return steps, raised, await store.sequence_of("e2") is not None

    steps, raised, kept_e2 = backend.run(scenario)
    assert steps == ["owner ends its block", "joiner left its block"]
    assert raised is None and kept_e2


def test_another_tasks_block_that_joins_a_transaction_rolled_back_raises(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> tuple[list[str], object, bool]:
        steps, raised = await joined_by_another_task(store, fail=True)
        return steps, raised, await store.sequence_of("e2") is not None

    steps, raised, kept_e2 = backend.run(scenario)
    assert steps == ["owner ends its block"]
    assert isinstance(raised, StoreError) and "rolled back" in str(raised)
    assert not kept_e2


def test_a_transaction_commits_only_once_another_tasks_block_inside_it_has_left(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> tuple[list[str], bool, bool]:
        steps: list[str] = []
        inside = asyncio.Event()
        ending = asyncio.Event()
        finish = asyncio.Event()

        async def owner() -> None:
            async with store.transaction():
                await write_one_of_each(store, "e1")
                await inside.wait()
                steps.append("owner ends its block")
                ending.set()
            steps.append("owner committed")

        async def joiner() -> None:
            async with store.transaction():
                inside.set()
                await finish.wait()
                await store.append("e2", "message", "human:u", {"text": "e2"}, AT)
                steps.append("joiner wrote")
            steps.append("joiner left its block")

        owning = asyncio.create_task(owner())
        await asyncio.sleep(0)
        joining = asyncio.create_task(joiner())
        await ending.wait()
        for _ in range(5):
            await asyncio.sleep(0)
        assert steps == ["owner ends its block"]  # and waits for the joiner to leave
        finish.set()
        await asyncio.gather(owning, joining)
        async with store.transaction():  # a transaction after it begins and ends as usual
            await store.append("e3", "message", "human:u", {"text": "e3"}, AT)
        return steps, await store.sequence_of("e2") is not None, store._depth == 0  # type: ignore[attr-defined]

    steps, kept_e2, closed = backend.run(scenario)
    assert steps == [
        "owner ends its block",
        "joiner wrote",
        "owner committed",
        "joiner left its block",
    ]
    assert kept_e2 and closed


def test_durable_returns_at_once_with_no_transaction_and_after_the_commit_of_an_open_one(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> tuple[list[str], object]:
        await store.durable()  # nothing open: nothing to wait for
        return await joined_by_another_task(store, fail=False, joiner=waits_until_durable)

    steps, raised = backend.run(scenario)
    assert steps == ["owner ends its block", "durable returned"]
    assert raised is None


def test_durable_raises_when_the_open_transaction_is_rolled_back(backend: Backend) -> None:
    async def scenario(store: Store) -> tuple[list[str], object]:
        return await joined_by_another_task(store, fail=True, joiner=waits_until_durable)

    steps, raised = backend.run(scenario)
    assert steps == ["owner ends its block"]
    assert isinstance(raised, StoreError) and "rolled back" in str(raised)


class SlowCommit(Nested):
    """A transaction whose commit takes as long as the test says."""

    def __init__(self) -> None:
        self.committing = asyncio.Event()
        self.commit_done = asyncio.Event()

    async def _begin(self) -> None:
        pass

    async def _commit(self) -> None:
        self.committing.set()
        await self.commit_done.wait()

    async def _rollback(self) -> None:
        pass


def test_durable_called_while_a_commit_is_in_flight_waits_for_it_to_end() -> None:
    async def scenario() -> list[str]:
        steps: list[str] = []
        store = SlowCommit()

        async def owner() -> None:
            async with store.transaction():
                pass
            steps.append("committed")

        async def waiter() -> None:
            await store.durable()
            steps.append("durable returned")

        owning = asyncio.create_task(owner())
        await store.committing.wait()  # no transaction is open any more, and none is durable
        waiting = asyncio.create_task(waiter())
        for _ in range(5):
            await asyncio.sleep(0)
        assert steps == []
        store.commit_done.set()
        await asyncio.gather(owning, waiting)
        await store.durable()  # and after it, at once
        return steps

    assert asyncio.run(scenario()) == ["committed", "durable returned"]


def test_another_tasks_nested_block_ends_with_it_not_at_the_commit(backend: Backend) -> None:
    """Only a task's outermost block waits for the commit: were its inner block (an append
    that opens one of its own) to wait too, the owner would wait for the task to leave and
    the task for the owner to commit."""

    async def scenario(store: Store) -> tuple[list[str], bool]:
        steps: list[str] = []
        inside = asyncio.Event()

        async def owner() -> None:
            async with store.transaction():
                await write_one_of_each(store, "e1")
                await inside.wait()
            steps.append("owner committed")

        async def joiner() -> None:
            async with store.transaction():
                inside.set()
                async with store.transaction():
                    await store.append("e2", "message", "human:u", {"text": "e2"}, AT)
                steps.append("inner block left")
            steps.append("joiner left its block")

        owning = asyncio.create_task(owner())
        await asyncio.sleep(0)
        joining = asyncio.create_task(joiner())
        async with asyncio.timeout(10):
            await asyncio.gather(owning, joining)
        return steps, await store.sequence_of("e2") is not None

    steps, kept_e2 = backend.run(scenario)
    assert steps == ["inner block left", "owner committed", "joiner left its block"]
    assert kept_e2


class SlowBegin(Nested):
    """A transaction whose `BEGIN` takes as long as the test says; what ran, in order."""

    def __init__(self) -> None:
        self.beginning = asyncio.Event()
        self.begin_done = asyncio.Event()
        self.ran: list[str] = []

    async def write(self, what: str) -> None:
        async with self.transaction():
            self.ran.append(what)

    async def _begin(self) -> None:
        self.beginning.set()
        await self.begin_done.wait()
        self.ran.append("BEGIN")

    async def _commit(self) -> None:
        self.ran.append("COMMIT")

    async def _rollback(self) -> None:
        pass


def test_another_tasks_block_waits_until_the_transaction_has_begun() -> None:
    async def scenario() -> list[str]:
        store = SlowBegin()
        owning = asyncio.create_task(store.write("the owner's write"))
        await store.beginning.wait()
        joining = asyncio.create_task(store.write("the joiner's write"))
        for _ in range(5):
            await asyncio.sleep(0)
        assert store.ran == []  # nothing of the joiner's runs before BEGIN
        store.begin_done.set()
        await asyncio.gather(owning, joining)
        return store.ran

    assert asyncio.run(scenario()) == ["BEGIN", "the owner's write", "the joiner's write", "COMMIT"]
