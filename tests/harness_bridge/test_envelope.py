"""The bridge's one builder of harness messages: every message validates against the wire model
and loses nothing in it, and a delivery is told the same from ingest or from the ledger."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from builders import local_workspace, run

from c2a.replay import NORMALISERS, parse_record
from core.clock import VirtualClock, parse_time
from core.deliveries import LedgerDeliveries
from core.emission import Cancel, Delivery, Typing
from core.engine import Engine
from core.events import Conversation, ConversationKind
from core.sqlite_store import SQLiteStore
from harness_bridge.envelope import deliver_request, message
from harness_bridge.wire import CancelledParams, TypingParams, parse_deliver

TRACE = Path(__file__).parents[2] / "manifests" / "examples" / "local-trace.jsonl"


@pytest.mark.parametrize("compact", [False, True], ids=["2026-06-02", "2026-06-24"])
def test_every_emitted_message_round_trips_through_the_wire_model(compact: bool) -> None:
    records, stats, report = run(TRACE.read_text().splitlines(), compact=compact)
    assert not report and stats.errors == 0
    rpcs = [r["rpc"] for r in records if "rpc" in r]
    assert {m["method"] for m in rpcs} == {"chat/deliver", "notifications/cancelled"}
    for sent in rpcs:
        params = sent["params"]
        if sent["method"] == "chat/deliver":
            assert parse_deliver(params).to_wire() == params
        else:
            assert CancelledParams.model_validate(params).to_wire() == params


@pytest.mark.parametrize("compact", [False, True], ids=["2026-06-02", "2026-06-24"])
def test_a_delivery_read_back_from_the_ledger_is_told_as_it_was_at_ingest(compact: bool) -> None:
    """The deliverer sends what ingest made, or, once it is no longer kept, what the ledger
    makes again; the replay sends what ingest returned: all one typed `Delivery`, and the
    bridge makes the same message of each."""

    async def run() -> int:
        clock = VirtualClock()
        store = SQLiteStore()
        await store.open()
        engine = Engine(local_workspace(), store, clock)
        ledger = LedgerDeliveries(store, clock, engine.framer, kept=0)  # keeps nothing
        compared = 0
        for line in TRACE.read_text().splitlines():
            record = parse_record(line)
            clock.set(record.at)
            event = NORMALISERS[record.platform](record.payload)
            assert event is not None
            async with store.transaction():
                outcome = await engine.ingest(event, record.via)
            for told in outcome.emissions:
                if not isinstance(told, Delivery):
                    continue
                (stored,) = [
                    d
                    for d in await store.deliveries(told.decision.event_id)
                    if d.decision.agent == told.agent
                ]
                again = await ledger.delivery(stored)
                kept = await engine.deliveries.delivery(stored)
                expected = deliver_request(told, compact=compact, attempt=2)
                assert deliver_request(again, compact=compact, attempt=2) == expected
                assert deliver_request(kept, compact=compact, attempt=2) == expected
                compared += 1
        await store.close()
        return compared

    assert asyncio.run(run()) > 20


def test_a_cancellation_and_a_typing_hint_are_the_notifications_the_wire_model_describes() -> None:
    conversation = Conversation("C0GEN", ConversationKind.THREAD, thread_id="1767225600.000100")
    until = parse_time("2026-01-01T00:00:10Z")
    cancel = message(Cancel("lead", "slack:T0LOCAL:C0GEN:1", "deleted"))
    typing = message(Typing("lead", conversation, "U0HUMAN", until))
    assert cancel == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"eventId": "slack:T0LOCAL:C0GEN:1", "reason": "deleted"},
    }
    assert typing["method"] == "notifications/typing"
    assert typing["params"] == {
        "conversation": {"id": "C0GEN", "kind": "thread", "threadId": "1767225600.000100"},
        "authorId": "U0HUMAN",
        "until": "2026-01-01T00:00:10Z",
    }
    assert TypingParams.model_validate(typing["params"]).to_wire() == typing["params"]
    assert CancelledParams.model_validate(cancel["params"]).to_wire() == cancel["params"]
