"""Several `chat/deliver` in flight per agent: the window is bounded, the harness reads the
ledger's order, and one delivery that is slow, refused, busy or never answered neither loses
nor reorders the others."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from delivery_world import (
    ACK,
    EVENTS,
    EVERYTHING,
    HOST,
    Answer,
    FakeHarness,
    ListedPort,
    engine_with_dms,
    mailbox_in_memory,
)

from core.sqlite_store import SQLiteStore
from harness_bridge.delivery import Deliverer
from harness_bridge.rpc import INVALID_PARAMS, SERVER_BUSY, RpcError
from harness_bridge.session import initialize

WINDOW = 8  # fewer than the ten events sent, so the window fills


async def deliver_all(
    answer: Answer, **options: Any
) -> tuple[FakeHarness, ListedPort, list[str], int]:
    """Ten direct messages to the lead through a deliverer to a fake harness; returns the
    harness, the port's record, the ledger's order and what `resume` returned."""
    store = SQLiteStore()
    engine, ids = await engine_with_dms(store)
    port = ListedPort([await engine.deliveries.delivery(s) for s in await store.pending("lead")])
    harness = FakeHarness(answer)
    try:
        async with asyncio.timeout(10):
            session = await initialize(harness.host, HOST, EVERYTHING)
            deliverer = Deliverer("lead", port, harness.host, session, **options)
            done = await deliverer.resume()
    finally:
        await harness.close()
        await store.close()
    return harness, port, ids, done


def delivered(port: ListedPort) -> dict[str, int | str]:
    return {event_id: attempt for step, event_id, attempt in port.calls if step == "delivered"}


def test_acks_held_back_leave_a_full_window_in_flight_and_answered_backwards_keep_the_order() -> (
    None
):
    gates: dict[str, asyncio.Event] = {}
    full = asyncio.Event()

    async def held(event_id: str, attempt: int) -> dict[str, Any]:
        gates[event_id] = asyncio.Event()
        if len(gates) == WINDOW:
            full.set()
        await gates[event_id].wait()
        return ACK

    async def release() -> None:
        await full.wait()
        for _ in range(20):  # the deliverer gets every chance to send a ninth
            await asyncio.sleep(0)
        assert len(gates) == WINDOW
        for gate in reversed(list(gates.values())):
            gate.set()
        while len(gates) < EVENTS:
            await asyncio.sleep(0)
        for gate in gates.values():
            gate.set()

    async def run() -> tuple[FakeHarness, ListedPort, list[str], int]:
        releasing = asyncio.create_task(release())
        outcome = await deliver_all(held, window=WINDOW)
        await releasing
        return outcome

    harness, port, ids, done = asyncio.run(run())
    assert done == EVENTS
    assert harness.most == WINDOW
    assert harness.arrived == [(event_id, 1) for event_id in ids]
    assert delivered(port) == dict.fromkeys(ids, 1)
    acked = [event_id for step, event_id, _ in port.calls if step == "delivered"]
    # the window's answers, come backwards, are recorded before any later delivery's
    assert sorted(acked[:WINDOW]) == sorted(ids[:WINDOW])
    # a full window's attempts are noted in one transaction before the first is sent, and the
    # answers that come together are recorded together
    assert port.batches[0] == ("attempts", WINDOW)
    assert sum(n for what, n in port.batches if what == "settled") == EVENTS
    assert len([what for what, _ in port.batches if what == "settled"]) < EVENTS


def test_one_refused_delivery_is_recorded_failed_and_the_others_go_on() -> None:
    async def refuse_the_third(event_id: str, attempt: int) -> dict[str, Any]:
        if event_id.endswith("1767225602.000100"):
            raise RpcError(INVALID_PARAMS, "not for me")
        return ACK

    harness, port, ids, done = asyncio.run(deliver_all(refuse_the_third))
    assert done == EVENTS
    assert harness.arrived == [(event_id, 1) for event_id in ids]
    assert ("failed", ids[2], "refused by the harness: not for me") in port.calls
    assert delivered(port) == {event_id: 1 for event_id in ids if event_id != ids[2]}


def test_timed_out_deliveries_are_sent_again_from_the_oldest_after_the_window_drains() -> None:
    async def lose_first_tries_of_two(event_id: str, attempt: int) -> dict[str, Any]:
        if attempt == 1 and event_id.endswith(("1767225602.000100", "1767225604.000100")):
            await asyncio.Event().wait()  # never answered
        return ACK

    harness, port, ids, done = asyncio.run(
        deliver_all(lose_first_tries_of_two, timeout=0.5, backoff=0, window=4)
    )
    assert done == EVENTS
    assert harness.arrived == [(e, 1) for e in ids] + [(ids[2], 2), (ids[4], 2)]
    assert delivered(port) == {e: 2 if e in (ids[2], ids[4]) else 1 for e in ids}
    assert not [call for call in port.calls if call[0] == "failed"]


def test_a_busy_answer_is_sent_again_not_failed() -> None:
    async def busy_once(event_id: str, attempt: int) -> dict[str, Any]:
        if attempt == 1 and event_id.endswith("1767225601.000100"):
            raise RpcError(SERVER_BUSY, "busy, retry later")
        return ACK

    harness, port, ids, done = asyncio.run(deliver_all(busy_once, backoff=0))
    assert done == EVENTS
    again = harness.arrived.index((ids[1], 2))  # before what was not yet sent, after the rest
    assert [a for a in harness.arrived if a != (ids[1], 2)] == [(e, 1) for e in ids]
    assert again > 1
    assert delivered(port) == {e: 2 if e == ids[1] else 1 for e in ids}


def test_a_delivery_never_answered_gives_up_after_its_attempts() -> None:
    async def silent_on_the_first(event_id: str, attempt: int) -> dict[str, Any]:
        if event_id == first:
            await asyncio.Event().wait()
        return ACK

    first = ""

    async def run() -> FakeHarness:
        nonlocal first
        store = SQLiteStore()
        engine, ids = await engine_with_dms(store)
        first = ids[0]
        port = ListedPort(
            [await engine.deliveries.delivery(s) for s in await store.pending("lead")]
        )
        harness = FakeHarness(silent_on_the_first)
        session = await initialize(harness.host, HOST, EVERYTHING)
        deliverer = Deliverer(
            "lead", port, harness.host, session, timeout=0.05, backoff=0, attempts=3
        )
        try:
            with pytest.raises(TimeoutError, match="in 3 attempts"):
                await deliverer.resume()
        finally:
            await harness.close()
            await store.close()
        assert [e for step, e, _ in port.calls if step == "delivered"] == ids[1:]
        return harness

    harness = asyncio.run(run())
    assert [attempt for event_id, attempt in harness.arrived if event_id == first] == [1, 2, 3]


def test_a_window_is_at_least_one() -> None:
    with pytest.raises(ValueError, match="at least one"):
        Deliverer("lead", ListedPort([]), None, None, window=0)  # type: ignore[arg-type]


def test_the_mailbox_stores_a_full_window_in_the_order_sent() -> None:
    """The harness's side takes each request in its own task, in the order read; the mailbox
    stores before its first await, so what turn assembly sees is the ledger's order."""

    async def run() -> tuple[list[str], list[str]]:
        store = SQLiteStore()
        engine, ids = await engine_with_dms(store)
        host, harness, mailbox = mailbox_in_memory()
        async with asyncio.timeout(10):
            session = await initialize(host, HOST, EVERYTHING)
            assert await Deliverer("lead", engine.deliveries, host, session).resume() == EVENTS
            assert await store.pending("lead") == []
        await host.close()
        await harness.close()
        await store.close()
        return ids, [e.event_id for e in mailbox.entries()]

    ids, stored = asyncio.run(run())
    assert stored == ids
