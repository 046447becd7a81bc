"""A deliverer reads what is pending when a pass starts, and again only when it was woken
since: a lone batch costs one read, a delivery recorded during a pass (and woken for) goes out
in the same pass, one recorded without a wake waits for the next, and a full page is read
past at once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from delivery_world import ACK, EVERYTHING, HOST, FakeHarness, ListedPort, engine_with_dms

from core.emission import Delivery
from core.sqlite_store import SQLiteStore
from core.store import StoredDelivery
from harness_bridge import delivery
from harness_bridge.delivery import Deliverer
from harness_bridge.session import initialize

FIRST = 5  # of the ten direct messages, pending when the pass starts


class CountedPort(ListedPort):
    """The list port, holding back all but the first `FIRST` deliveries and counting reads."""

    def __init__(self, told: list[Delivery]) -> None:
        super().__init__(told)
        self.later = self.left[FIRST:]
        self.left = self.left[:FIRST]
        self.reads = 0

    async def pending(self, agent: str) -> list[StoredDelivery]:
        self.reads += 1
        return await super().pending(agent)

    def record_the_rest(self) -> None:
        self.left, self.later = [*self.left, *self.later], []


Script = Callable[[CountedPort, Deliverer], Awaitable[int]]
OnFirst = Callable[[CountedPort, Deliverer], None]


async def resume(port: CountedPort, deliverer: Deliverer) -> int:
    return await deliverer.resume()


async def with_deliverer(
    script: Script, on_first: OnFirst | None = None, port_type: type[CountedPort] = CountedPort
) -> Any:
    """Run `script` on a deliverer whose harness acknowledges everything (calling `on_first`
    when the first delivery arrives); returns what it returns, the port and the event ids
    delivered."""
    store = SQLiteStore()
    engine, _ = await engine_with_dms(store)
    port = port_type([await engine.deliveries.delivery(s) for s in await store.pending("lead")])
    deliverers: list[Deliverer] = []

    async def answer(event_id: str, attempt: int) -> dict[str, Any]:
        if on_first is not None and len(harness.arrived) == 1:
            on_first(port, deliverers[0])
        return ACK

    harness = FakeHarness(answer)
    try:
        async with asyncio.timeout(10):
            session = await initialize(harness.host, HOST, EVERYTHING)
            deliverer = Deliverer("lead", port, harness.host, session)
            deliverers.append(deliverer)
            result = await script(port, deliverer)
    finally:
        await harness.close()
        await store.close()
    return result, port, [event_id for event_id, _ in harness.arrived]


def test_a_pass_with_nothing_recorded_meanwhile_reads_what_is_pending_once() -> None:
    async def script(port: CountedPort, deliverer: Deliverer) -> int:
        deliverer.wake()  # a wake before the pass's read is answered by that read
        return await deliverer.resume()

    done, port, arrived = asyncio.run(with_deliverer(script))
    assert done == FIRST and len(arrived) == FIRST
    assert port.reads == 1


def test_a_delivery_recorded_and_woken_for_during_a_pass_goes_out_in_that_pass() -> None:
    def recorded(port: CountedPort, deliverer: Deliverer) -> None:
        port.record_the_rest()
        deliverer.wake()

    done, port, arrived = asyncio.run(with_deliverer(resume, recorded))
    assert done == 10 and len(arrived) == 10
    assert port.reads == 2


def test_a_delivery_recorded_without_a_wake_waits_for_the_next_pass() -> None:
    async def script(port: CountedPort, deliverer: Deliverer) -> int:
        serving = asyncio.create_task(deliverer.serve())
        while len(port.calls) < 2 * FIRST:  # each sent, then delivered
            await asyncio.sleep(0)
        port.record_the_rest()  # recorded, but nobody woke the deliverer
        for _ in range(20):
            await asyncio.sleep(0)
        before = len(port.calls)
        deliverer.wake()
        while len([c for c in port.calls if c[0] == "delivered"]) < 10:
            await asyncio.sleep(0)
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        return before

    before, port, arrived = asyncio.run(with_deliverer(script))
    assert before == 2 * FIRST  # nothing more went until the wake
    assert len(arrived) == 10
    assert port.reads == 2


class PagedPort(CountedPort):
    """The list port giving at most `PAGE` pending deliveries a read, as the ledger gives
    `PENDING_PAGE`."""

    async def pending(self, agent: str) -> list[StoredDelivery]:
        return (await super().pending(agent))[:PAGE]


PAGE = 3


def test_a_full_page_is_read_past_with_no_wake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(delivery, "PENDING_PAGE", PAGE)

    async def script(port: CountedPort, deliverer: Deliverer) -> int:
        port.record_the_rest()  # ten pending, in pages of three
        return await deliverer.resume()

    done, port, arrived = asyncio.run(with_deliverer(script, port_type=PagedPort))
    # All ten, with no wake: each full page is read past (and a page all in flight is read
    # again once one of it has landed, not in a loop that never yields: that would time out).
    assert done == 10 and arrived == list(port.told)  # each once, in the ledger's order
