"""The outbox beside transactions that are rolled back, and platforms that cannot say: every
task shares the ledger's connection, so a drain may read a row another task has not
committed, and its writes may join a transaction another task then rolls back."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from test_outbox import AT, HI, ScriptedSender, outbox_rows

from core.action_records import to_record
from core.actions import Action, Post
from core.clock import VirtualClock, parse_time
from core.errors import PermanentSendError
from core.outbox import Outbox
from core.sqlite_store import SQLiteStore

GONE = Post(agent="lead", platform="slack", conversation="C0GONE", key="k0", text="earlier")


class Held(ScriptedSender):
    """A platform whose lookups of earlier attempts wait for `release`, and which never finds
    one; it posts what it is sent."""

    def __init__(self) -> None:
        super().__init__([])
        self.looking, self.release = asyncio.Event(), asyncio.Event()

    async def send(self, action: Action) -> dict[str, Any]:
        self.posted.append(action.key)
        return {"messageId": f"m{len(self.posted)}"}

    async def find(self, action: Action) -> dict[str, Any] | None:
        self.looking.set()
        await self.release.wait()
        return None


async def opened(sender: ScriptedSender) -> tuple[SQLiteStore, Outbox]:
    store = SQLiteStore()
    await store.open()
    return store, Outbox(store, VirtualClock(parse_time(AT)), {"slack": sender})


async def queue_then_fail(store: SQLiteStore, action: Post, waiting: asyncio.Event) -> None:
    """Work that queues `action`, waits for `waiting` (any suspension inside the
    transaction), then fails: the transaction is rolled back."""
    try:
        async with store.transaction():
            await store.put_outbox(action.key, action.agent, to_record(action), AT)
            await waiting.wait()
            raise RuntimeError("the engine failed on another event of the batch")
    except RuntimeError:
        pass


def test_an_action_whose_queueing_was_rolled_back_is_never_sent() -> None:
    """The drain read it uncommitted, then looked for an earlier attempt while the queueing
    was rolled back: it is not there, so it does not go; queued again, it goes once."""

    async def go() -> tuple[list[str], list[tuple[str, str, int]]]:
        sender = Held()
        store, outbox = await opened(sender)
        async with store.transaction():  # an attempt a crash cut: looked for first
            await store.put_outbox("k0", "lead", to_record(GONE), AT)
            await store.outbox_mark("k0", "sending", AT)
        await outbox.recover()
        failing = asyncio.create_task(queue_then_fail(store, HI, sender.looking))
        await asyncio.sleep(0)  # HI is queued, not committed
        drain = asyncio.create_task(outbox.drain())
        await failing
        sender.release.set()
        await drain
        async with store.transaction():  # the work done again
            await store.put_outbox(HI.key, HI.agent, to_record(HI), AT)
        await outbox.drain()
        rows = outbox_rows(store)
        await store.close()
        return sender.posted, rows

    posted, rows = asyncio.run(go())
    assert posted == ["k0", "k1"]
    assert rows == [("k0", "sent", 2), ("k1", "sent", 1)]


def test_an_outcome_whose_transaction_was_rolled_back_is_recorded_at_the_next_round() -> None:
    """The attempt's outcome joined a transaction another task then rolled back: it is not
    lost, and the action is not left `sending`."""

    async def go() -> tuple[list[str], list[tuple[str, str, int]]]:
        sender = ScriptedSender([])
        store, outbox = await opened(sender)
        async with store.transaction():
            await store.put_outbox(HI.key, HI.agent, to_record(HI), AT)
        sent, other = (
            asyncio.Event(),
            Post(agent="lead", platform="slack", conversation="C0GEN", key="k9", text="other"),
        )
        send = sender.send

        async def slow(action: Action) -> dict[str, Any]:
            failing.append(asyncio.create_task(queue_then_fail(store, other, sent)))
            await asyncio.sleep(0)  # the other task's transaction is open, and stays open
            asyncio.get_running_loop().call_soon(sent.set)  # until the outcome has joined it
            return await send(action)

        failing: list[asyncio.Task[None]] = []
        sender.send = slow  # type: ignore[method-assign]
        await outbox.drain()
        await failing[0]
        assert outbox_rows(store) == [("k1", "sending", 1)]
        sender.send = send  # type: ignore[method-assign]
        await outbox.drain()
        rows = outbox_rows(store)
        await store.close()
        return sender.posted, rows

    posted, rows = asyncio.run(go())
    assert posted == ["k1"] and rows == [("k1", "sent", 1)]


def test_an_earlier_attempt_the_platform_will_never_show_fails_for_good() -> None:
    """The channel is gone: the lookup fails for good, and so does the action (in the audit
    log), instead of being looked for at every round ahead of everything queued after it."""

    async def go() -> tuple[list[str], list[tuple[str, str, int]], list[str]]:
        sender = ScriptedSender([])

        async def refused(action: Action) -> dict[str, Any] | None:
            raise PermanentSendError("channel_not_found")

        sender.find = refused  # type: ignore[method-assign]
        store, outbox = await opened(sender)
        async with store.transaction():
            await store.put_outbox("k0", "lead", to_record(GONE), AT)
            await store.outbox_mark("k0", "sending", AT)
        await outbox.recover()
        await outbox.drain()
        await outbox.drain()
        rows = outbox_rows(store)
        audit = [record.outcome for record in await store.audit_records(10)]
        await store.close()
        return sender.posted, rows, audit

    posted, rows, audit = asyncio.run(go())
    assert posted == [] and rows == [("k0", "failed", 1)] and audit == ["failed"]


def test_an_attempt_whose_mark_was_rolled_back_does_not_go_this_round(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Marking it `sending` joined a transaction another task rolled back: the mark is not
    durable, so it does not go (a warning, not an error); the next round sends it once."""

    async def go() -> tuple[list[str], list[tuple[str, str, int]]]:
        sender = ScriptedSender([])
        store, outbox = await opened(sender)
        async with store.transaction():
            await store.put_outbox(HI.key, HI.agent, to_record(HI), AT)
        other = Post(agent="lead", platform="slack", conversation="C0GEN", key="k9", text="x")
        fail = asyncio.Event()
        failing = asyncio.create_task(queue_then_fail(store, other, fail))
        await asyncio.sleep(0)  # its transaction is open
        asyncio.get_running_loop().call_soon(fail.set)
        assert await outbox.drain() == 0
        await failing
        assert sender.posted == []
        assert await outbox.drain() == 1
        rows = outbox_rows(store)
        await store.close()
        return sender.posted, rows

    with caplog.at_level(logging.WARNING, logger="core.outbox"):
        posted, rows = asyncio.run(go())
    assert posted == ["k1"] and rows == [("k1", "sent", 1)]
    assert [r.levelname for r in caplog.records] == ["WARNING"]
