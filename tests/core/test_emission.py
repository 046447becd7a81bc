"""The engine's output is typed values, never wire messages: a delivery, a cancellation, a
queued action; only the harness bridge speaks JSON-RPC."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from builders import LEAD, local_workspace, slack_body, slack_delete, slack_message

from adapters.slack import normalise
from core.actions import React
from core.clock import VirtualClock, parse_time
from core.decision import InjectionMode, Policy
from core.emission import Cancel, Delivery, Emission, Queued
from core.engine import Engine
from core.signals import Signal
from core.sqlite_store import SQLiteStore

CORE = Path(__file__).resolve().parents[2] / "core"
TS = "1767225601.000100"


def test_core_builds_no_json_rpc_message() -> None:
    wire = re.compile(r"""["'](jsonrpc|method)["']""")
    found = [
        f"{path.name}:{number}"
        for path in sorted(CORE.glob("*.py"))
        for number, text in enumerate(path.read_text().splitlines(), start=1)
        if wire.search(text)
    ]
    assert found == []


def test_a_question_and_its_deletion_are_emitted_as_typed_values() -> None:
    async def run() -> tuple[list[Emission], list[Emission]]:
        store = SQLiteStore()
        await store.open()
        engine = Engine(local_workspace(), store, VirtualClock(parse_time("2026-01-01T00:00:01Z")))
        text = f"<@{LEAD}> is the deploy done?"
        dm = {"channel": "D0LEAD", "channel_type": "im"}
        asked = normalise(slack_body(slack_message(TS, text, **dm), via="lead"))
        gone = normalise(slack_body(slack_delete(TS, "1767225609.000100", text, **dm), via="lead"))
        assert asked is not None and gone is not None
        async with store.transaction():
            first = (await engine.ingest(asked)).emissions
            second = (await engine.ingest(gone)).emissions
        await store.close()
        return first, second

    first, second = asyncio.run(run())
    delivery, seen = first
    assert isinstance(delivery, Delivery) and delivery.agent == "lead"
    assert (delivery.decision.policy, delivery.decision.mode) == (
        Policy.MUST_RESPOND,
        InjectionMode.BUFFERED,
    )
    assert delivery.decision.idempotency_key == f"{delivery.event.event_id}:lead"
    assert delivery.facts.mentions == ("agent:lead",)
    assert delivery.recipient == "agent:lead" and delivery.topic is None
    assert isinstance(seen, Queued) and isinstance(seen.action, React)
    assert seen.action.signal is Signal.SEEN
    assert second == [Cancel("lead", delivery.event.event_id, "deleted")]
