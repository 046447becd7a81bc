"""The scorer's training (`bench/train_attention.py`): the fit is exact and repeatable, and the
weights it writes are ones `core.scorer` accepts. No corpus needed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import train_attention

from core.scorer import FEATURES, Scorer


def rows() -> tuple[list[tuple[float, ...]], list[float]]:
    """Cues where the second feature (the partner) makes an answer likely, with some noise."""
    n = len(FEATURES)
    xs: list[tuple[float, ...]] = []
    ys: list[float] = []
    for i in range(400):
        partner = 1.0 if i % 2 else 0.0
        other = (i % 7) / 7.0
        xs.append((1.0, partner, *([other] * (n - 2))))
        ys.append(1.0 if (partner and i % 5) or (not partner and i % 9 == 0) else 0.0)
    return xs, ys


def test_the_fit_is_the_same_every_time_and_learns_the_signal() -> None:
    xs, ys = rows()
    first = train_attention.fit(xs, ys, 1.0)
    assert first == train_attention.fit(xs, ys, 1.0)
    assert len(first) == len(FEATURES)
    scorer = Scorer(tuple(first), 0.5)
    z = [sum(w * x for w, x in zip(first, row, strict=True)) for row in (xs[1], xs[0])]
    assert z[0] > 0 > z[1]
    assert scorer.threshold == 0.5


def test_a_larger_penalty_shrinks_the_weights() -> None:
    xs, ys = rows()
    small, large = train_attention.fit(xs, ys, 0.1), train_attention.fit(xs, ys, 1000.0)
    assert sum(abs(w) for w in large[1:]) < sum(abs(w) for w in small[1:])


def test_the_solver_solves_a_small_system() -> None:
    a = [[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]]
    x = train_attention._solve(a, [1.0, 2.0, 3.0])
    for row, rhs in zip(a, [1.0, 2.0, 3.0], strict=True):
        assert sum(r * v for r, v in zip(row, x, strict=True)) == pytest.approx(rhs)


def test_without_the_corpus_it_says_where_it_looked(tmp_path: Path) -> None:
    out = tmp_path / "weights.json"
    assert train_attention.main(["--data", str(tmp_path), "--out", str(out)]) == 2
    assert not out.exists()


def test_the_shipped_weights_name_what_they_were_trained_and_tuned_on() -> None:
    data = json.loads((Path(train_attention.OUT)).read_text())
    assert data["trained_on"] == "ubuntu-train"
    assert data["tuned_on"] == ["ubuntu-dev", "channel-two"]
    assert Scorer.from_data(data, "shipped").weights == tuple(data["weights"])


def test_the_choice_is_the_best_coverage_within_the_turns_on_every_split() -> None:
    Trial = train_attention.Trial
    over = Trial(0.1, 0.06, 0.15, (0.70, 0.70), (1.6, 1.4), (0.5, 0.7))
    within = Trial(0.1, 0.10, 0.20, (0.61, 0.60), (1.44, 1.41), (0.5, 0.7))
    cheaper = Trial(1.0, 0.10, 0.30, (0.61, 0.60), (1.40, 1.40), (0.5, 0.7))
    assert train_attention.choose([over, within, cheaper]) is cheaper
    assert train_attention.choose([over]) is over
    assert "| 0.1 | 0.10 | 0.20 |" in within.line()
