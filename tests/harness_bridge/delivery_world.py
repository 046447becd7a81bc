"""What the delivery tests share: a ledger of direct messages to the lead, a mailbox harness at
the end of an in-memory link, a harness whose answers a test writes, and a `DeliveryPort`
that is a plain list."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from builders import LEAD, local_workspace, slack_body, slack_message

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.deliveries import Settled
from core.emission import Delivery
from core.engine import Engine
from core.sqlite_store import SQLiteStore
from core.store import StoredDelivery
from harness_bridge.jsonrpc import Capabilities, ClientInfo
from harness_bridge.mailbox import Mailbox, serve_mailbox
from harness_bridge.rpc import Connection
from harness_bridge.session import accept_initialize
from harness_bridge.transport import MemoryTransport
from harness_bridge.wire import METHOD_DELIVER

HOST = ClientInfo(name="c2a-host", version="0.1.0")
EVERYTHING = Capabilities.model_validate(
    {
        "delivery": {"ack": True, "redelivery": True, "idempotency": True},
        "injection": dict.fromkeys(
            ("immediate", "buffered", "notify", "tool_mailbox", "digest"), True
        ),
    }
)
EVENTS = 10


async def engine_with_dms(store: SQLiteStore) -> tuple[Engine, list[str]]:
    engine = Engine(local_workspace(), store, VirtualClock(parse_time("2026-01-01T00:00:00Z")))
    await store.open()
    ids = []
    async with store.transaction():
        for n in range(EVENTS):
            ts = f"{1767225600 + n}.000100"
            text = f"<@{LEAD}> question {n}?"
            event = normalise(
                slack_body(slack_message(ts, text, channel="D0LEAD", channel_type="im"), via="lead")
            )
            assert event is not None
            await engine.ingest(event)
            ids.append(event.event_id)
    return engine, ids


def mailbox_in_memory() -> tuple[Connection, Connection, Mailbox]:
    """The host's end of an in-memory link, a mailbox harness at the other end, and its
    mailbox: both ends started, `initialize` still to come."""
    a, b = MemoryTransport.pair()
    host, harness = Connection(a, name="harness"), Connection(b, name="host")
    mailbox = Mailbox()
    serve_mailbox(harness, mailbox)
    accept_initialize(harness, ClientInfo(name="h", version="0"), EVERYTHING)
    host.start()
    harness.start()
    return host, harness, mailbox


class ListedPort:
    """A `DeliveryPort` that is not the ledger: the deliverer needs nothing else of the host."""

    def __init__(self, told: list[Delivery]) -> None:
        self.told = {d.decision.event_id: d for d in told}
        self.calls: list[tuple[str, str, int | str]] = []
        self.batches: list[tuple[str, int]] = []  # each bookkeeping call: what, how many
        self.left = [StoredDelivery(d.decision, d.seq, "pending", 0, None) for d in told]

    async def pending(self, agent: str) -> list[StoredDelivery]:
        return [s for s in self.left if s.decision.agent == agent]

    async def delivery(self, stored: StoredDelivery) -> Delivery:
        return self.told[stored.decision.event_id]

    async def next_attempts(self, chunk: Sequence[StoredDelivery]) -> list[int]:
        self.batches.append(("attempts", len(chunk)))
        for stored in chunk:
            attempt = stored.attempt + 1
            self.calls.append(("attempt", stored.decision.event_id, attempt))
            event_id = stored.decision.event_id
            self.left = [
                replace(s, attempt=attempt) if s.decision.event_id == event_id else s
                for s in self.left
            ]
        return [s.attempt + 1 for s in chunk]

    async def settle(self, settled: Sequence[Settled]) -> None:
        """Acknowledged or failed, a delivery is no longer pending (as in the ledger)."""
        self.batches.append(("settled", len(settled)))
        for each in settled:
            event_id = each.stored.decision.event_id
            if each.refused is None:
                self.calls.append(("delivered", event_id, each.attempt))
            else:
                self.calls.append(("failed", event_id, each.refused))
            self.left = [s for s in self.left if s.decision.event_id != event_id]


Answer = Callable[[str, int], Awaitable[dict[str, Any]]]
ACK = {"accepted": True, "duplicate": False}


class FakeHarness:
    """The harness's end of an in-memory link whose `chat/deliver` answers are `answer`'s;
    it notes every arrival (event id, attempt) and the most requests it held at once."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.arrived: list[tuple[str, int]] = []
        self.holding = 0
        self.most = 0
        a, b = MemoryTransport.pair()
        self.host, self.end = Connection(a, name="harness"), Connection(b, name="host")
        accept_initialize(self.end, ClientInfo(name="fake", version="0"), EVERYTHING)
        self.end.on_request(METHOD_DELIVER, self._deliver)
        self.host.start()
        self.end.start()

    async def _deliver(self, params: dict[str, Any] | None) -> dict[str, Any]:
        assert params is not None
        event_id, attempt = params["eventId"], params["reliability"]["attempt"]
        self.arrived.append((event_id, attempt))
        self.holding += 1
        self.most = max(self.most, self.holding)
        try:
            return await self.answer(event_id, attempt)
        finally:
            self.holding -= 1

    async def close(self) -> None:
        await self.host.close()
        await self.end.close()
