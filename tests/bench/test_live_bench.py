"""The live benchmark's own code: its figures from known receipts, and one tiny run on Slack
(a few seconds) that fills every row of the table."""

from __future__ import annotations

import asyncio
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import live_bench
from live_load import Receipt, key_of, percentile, read_receipts, summarise


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))


def test_a_message_key_ends_either_platforms_event_id() -> None:
    assert key_of("slack:T0BENCH:C0B1:1767225600.000001") == "1767225600.000001"
    assert key_of("discord:820000000000000001") == "820000000000000001"


def test_latency_runs_from_the_first_write_to_each_agents_first_receipt() -> None:
    sent = {"m1": 10.0, "m2": 10.5}
    receipts = [
        Receipt("a", "m1", 10.002),
        Receipt("b", "m1", 10.004),
        Receipt("b", "m1", 10.009),  # a second copy: counted as doubled, not as latency
        Receipt("a", "m2", 10.501),
        Receipt("a", "other-phase", 9.0),
    ]
    figures = summarise(
        sent, receipts, agents=2, events_per_message=3, cpu_s=0.006, rss=50.0, last_send=10.5
    )
    assert (figures.received, figures.expected, figures.doubled) == (3, 4, 1)
    assert math.isclose(figures.max_ms, 4.0, abs_tol=1e-6)
    assert math.isclose(figures.p50_ms, 2.0, abs_tol=1e-6)
    assert math.isclose(figures.cpu_us_per_event, 1000.0)
    assert math.isclose(figures.offered, 2.0)
    assert math.isclose(figures.throughput, 1.5 / 0.501)  # 3 of 4 arrived, in 501 ms


def test_receipts_are_read_from_every_recorder_file(tmp_path: Path) -> None:
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("lead slack:T:C:1.000001 5.5\nworker-2 slack:T:C:2.0")  # being written
    second.write_text("worker-1 discord:42 6.25\n")
    receipts = read_receipts([first, second, tmp_path / "missing.txt"])
    assert receipts == [Receipt("lead", "1.000001", 5.5), Receipt("worker-1", "42", 6.25)]


def test_a_tiny_live_run_on_slack_measures_both_sides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live_bench, "WARMUP", 6)
    monkeypatch.setattr(live_bench, "SETTLE_S", 0.5)
    lines = asyncio.run(asyncio.wait_for(live_bench.main([30.0], 0.3, ["slack"]), 90))
    rows = [line for line in lines if "|" in line and ("c2a " in line or "bare " in line)]
    assert len(rows) == 2
    assert all("doubled" not in row for row in rows)
    assert any("c2a/bare" in line for line in lines)
