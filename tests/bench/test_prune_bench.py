"""The retention benchmark's own code: a tiny run of the whole script prints every figure and
leaves in the ledger only what retention keeps (the full run is `make bench`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import prune_bench


def test_a_tiny_run_prints_every_figure(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        sys, "argv", ["prune_bench.py", "--rows", "600", "--conversations", "30", "--webchat", "50"]
    )
    prune_bench.main()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("built 600 events")
    assert lines[1].startswith("a round with nothing to drop: ")
    assert lines[2].startswith("half the ledger: ") and " 0 events" not in lines[2]
    assert lines[3].startswith("the next round, caught up: ")
    assert lines[4].startswith("web chat history of 50 messages (")
    assert (
        lines[5].startswith("web chat rounds: nothing to drop ")
        and "half (23 messages)" in lines[5]
    )
