"""The replay's parse-and-append floor: every trace line parsed and appended, a batch to a
transaction, and the line `make bench` prints beside the replay's rate."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

from builders import flat_joined, flat_say

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import irc_replay
import replay_floor


def test_the_floor_appends_every_line_of_the_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    lines = flat_joined() + [flat_say(second, f"line {second}") for second in range(1, 20)]
    trace.write_text("\n".join(lines) + "\n\n")
    ledger = tmp_path / "floor.sqlite3"
    figures = asyncio.run(replay_floor.floor(trace, ledger, batch=5))
    assert (figures["lines"], figures["events"], figures["batch"]) == (22, 22, 5)
    assert figures["eventsPerSecond"] > 0
    db = sqlite3.connect(ledger)
    assert db.execute("SELECT count(*), min(id), max(seq) FROM events").fetchone() == (
        22,
        "line:1",
        22,
    )


def _replay(rate: float, floor: float) -> irc_replay.Replay:
    stats = {"eventsPerSecond": rate}
    return irc_replay.Replay(stats, 1.0, 0, [], {"eventsPerSecond": floor, "batch": 64})


def test_the_report_gives_the_ratio_to_the_floor_and_the_target() -> None:
    assert irc_replay.floor_line(_replay(6000.0, 10000.0)).endswith(
        "6,000 against 10,000 events/s (batches of 64), **0.60** of the floor "
        "(target at least 0.5: met)"
    )
    assert "**0.25** of the floor (target at least 0.5: missed)" in irc_replay.floor_line(
        _replay(5000.0, 20000.0)
    )
    assert irc_replay.floor_line(irc_replay.Replay({}, 1.0, 0, [], {})).endswith("not measured")
