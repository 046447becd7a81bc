"""The web chat start benchmark's own code: a tiny run prints its one line of figures (the full
run is `make bench`)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import webchat_start


def test_a_tiny_run_prints_the_three_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["webchat_start.py", "--messages", "30", "--cut", "3"])
    webchat_start.main()
    line = capsys.readouterr().out.strip()
    assert re.fullmatch(
        r"web chat record of 30 messages, until the page is served: first start [\d.]+ s "
        r"\(every line decided\), restart [\d.]+ s, restart with 3 lines the ledger lacks "
        r"[\d.]+ s",
        line,
    ), line
