"""Every message the host emits validates against the wire model and loses nothing in it."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import run

from harness_bridge.wire import CancelledParams, parse_deliver

TRACE = Path(__file__).parents[2] / "manifests" / "examples" / "local-trace.jsonl"


@pytest.mark.parametrize("compact", [False, True], ids=["2026-06-02", "2026-06-24"])
def test_every_emitted_message_round_trips_through_the_wire_model(compact: bool) -> None:
    records, stats, report = run(TRACE.read_text().splitlines(), compact=compact)
    assert not report and stats.errors == 0
    rpcs = [r["rpc"] for r in records if "rpc" in r]
    assert {m["method"] for m in rpcs} == {"chat/deliver", "notifications/cancelled"}
    for message in rpcs:
        params = message["params"]
        if message["method"] == "chat/deliver":
            assert parse_deliver(params).to_wire() == params
        else:
            assert CancelledParams.model_validate(params).to_wire() == params
