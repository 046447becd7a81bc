"""Training: the weights of the `to_me_likely` scorer (`core/scorer_weights.json`), from real chat.

    python bench/train_attention.py [--data DIR] [--out core/scorer_weights.json]

It replays `ubuntu-train` of the IRC disentanglement corpus through the engine, each upstream
file on its own with its three most active people seated as agents and continuity's rules
deciding, and records every question to the room and every statement no rule decided (the cues
the scorer will be asked about) with its `features`; a cue is a positive when the seat's human
answered that line. A logistic regression with an L2 penalty is fitted by Newton's method (a
fixed number of steps from zero weights: no randomness, so the same data gives the same weights
to the last digit written). The penalty and the two thresholds (questions, statements) are then
chosen on `ubuntu-dev` and `channel-two` by replaying them with each candidate: the highest mean
coverage of the answered lines with model turns at most `MAX_TURNS` times the answers on each.
`ubuntu-test` and `new-domains` are never read here.
This module owns the fitting and the choice; `attention_eval.py` the replay and the scores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from attention_eval import (
    DEFAULT_DATA,
    answered_lines,
    replay,
    score_split,
    workspace_for,
)
from irc_convert import IrcRecord, choose_agents, to_trace
from irc_replay import load_records

from core.continuity import SCORED, Continuity, Cue, Window
from core.events import ChatEvent
from core.scorer import FEATURES, WEIGHTS_FILE, Scorer, features

__all__ = ["Recording", "Trial", "choose", "fit", "main"]

OUT = Path(__file__).resolve().parent.parent / "core" / WEIGHTS_FILE
TRAIN = "ubuntu-train"
TUNE = ("ubuntu-dev", "channel-two")
PENALTIES = (0.1, 1.0, 10.0)
THRESHOLDS = tuple(round(0.02 * i, 2) for i in range(3, 9))
STATEMENT_THRESHOLDS = (0.15, 0.2, 0.3, 0.5)
MAX_TURNS = 1.5
STEPS = 12
DIGITS = 6


class NoRoom(Scorer):
    """A scorer that takes no question to the room: the replay decides as continuity's rules
    alone, while continuity still finds the questions to record."""

    def likely(self, cue: Cue) -> bool:
        return False


class Recording(Continuity):
    """Continuity that keeps every question to the room the scorer would be asked about: (the
    line's Slack ts, agent, features)."""

    rows: list[tuple[str, str, tuple[float, ...]]]

    def __init__(self) -> None:
        super().__init__()
        self.rows = []

    def cues(
        self,
        event: ChatEvent,
        agents: tuple[str, ...],
        named: tuple[str, ...] = (),
        room: bool = False,
    ) -> dict[str, Cue]:
        found = super().cues(event, agents, named, room)
        ts = event.event_id.rsplit(":", 1)[-1]
        for agent, cue in found.items():
            if cue.reason in SCORED and not cue.burst_turned:
                self.rows.append((ts, agent, features(cue)))
        return found


def examples(records: list[IrcRecord]) -> tuple[list[tuple[float, ...]], list[float]]:
    """The training rows of a split, each upstream file replayed on its own with its three most
    active people seated: each cue on a judged line, and whether the seat answered it."""
    files: dict[str, list[IrcRecord]] = {}
    for record in records:
        files.setdefault(record["file"], []).append(record)
    xs: list[tuple[float, ...]] = []
    ys: list[float] = []
    for part in files.values():
        x, y = _file_examples(part)
        xs += x
        ys += y
    return xs, ys


def _file_examples(records: list[IrcRecord]) -> tuple[list[tuple[float, ...]], list[float]]:
    agents = choose_agents(records, 3)
    conversion = to_trace(records, agents)
    recording = Recording()
    rules = NoRoom((0.0,) * len(FEATURES), 0.5)
    asyncio.run(replay(workspace_for(agents), conversion.lines, Window(), rules, recording))
    ts_by_key = {key: ts for ts, key in conversion.key_by_ts.items()}
    judged: dict[str, tuple[set[str], set[str]]] = {}
    for agent, nick in agents.items():
        scope, gold = answered_lines(records, nick, ts_by_key)
        judged[agent] = ({ts_by_key[k] for k in scope}, {ts_by_key[k] for k in gold})
    xs: list[tuple[float, ...]] = []
    ys: list[float] = []
    for ts, agent, row in recording.rows:
        scope_ts, gold_ts = judged[agent]
        if ts in scope_ts:
            xs.append(row)
            ys.append(1.0 if ts in gold_ts else 0.0)
    return xs, ys


def fit(xs: Sequence[tuple[float, ...]], ys: Sequence[float], penalty: float) -> list[float]:
    """Logistic regression weights by `STEPS` Newton steps from zero, the bias unpenalised."""
    n = len(FEATURES)
    w = [0.0] * n
    for _ in range(STEPS):
        grad = [0.0] * n
        hess = [[0.0] * n for _ in range(n)]
        for x, y in zip(xs, ys, strict=True):
            z = sum(wi * xi for wi, xi in zip(w, x, strict=True))
            p = 1.0 / (1.0 + math.exp(-max(min(z, 60.0), -60.0)))
            r, v = p - y, p * (1.0 - p)
            for i in range(n):
                xi = x[i]
                if xi == 0.0:
                    continue
                grad[i] += r * xi
                vx = v * xi
                row = hess[i]
                for j in range(i, n):
                    row[j] += vx * x[j]
        for i in range(n):
            for j in range(i):
                hess[i][j] = hess[j][i]
            if i:
                grad[i] += penalty * w[i]
                hess[i][i] += penalty
        step = _solve(hess, grad)
        w = [wi - si for wi, si in zip(w, step, strict=True)]
    return [round(wi, DIGITS) for wi in w]


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """x with a·x = b, by Gaussian elimination with partial pivoting (a is small and dense)."""
    n = len(b)
    m = [[*row, rhs] for row, rhs in zip(a, b, strict=True)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        if abs(m[col][col]) < 1e-12:
            m[col][col] = 1e-12
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            if f:
                for c in range(col, n + 1):
                    m[r][c] -= f * m[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


@dataclass(frozen=True, slots=True)
class Trial:
    """One penalty and pair of thresholds, and what they gave on each tuning split."""

    penalty: float
    threshold: float
    statement_threshold: float
    coverage: tuple[float, ...]
    turns: tuple[float, ...]
    precision: tuple[float, ...]

    @property
    def fits(self) -> bool:
        return all(t <= MAX_TURNS for t in self.turns)

    def line(self) -> str:
        cells = " | ".join(
            f"{100 * c:.0f} % at {t:.2f}x, must {100 * p:.0f} %"
            for c, t, p in zip(self.coverage, self.turns, self.precision, strict=True)
        )
        thresholds = f"{self.threshold:.2f} | {self.statement_threshold:.2f}"
        return f"| {self.penalty:g} | {thresholds} | {cells} |"


def tune(
    weights_by_penalty: dict[float, list[float]], tuning: dict[str, list[IrcRecord]]
) -> list[Trial]:
    """Every penalty and pair of thresholds, replayed on the tuning splits."""
    trials = []
    pairs = [(q, s) for q in THRESHOLDS for s in STATEMENT_THRESHOLDS]
    for penalty, weights in weights_by_penalty.items():
        for threshold, statement in pairs:
            scorer = Scorer(tuple(weights), threshold, statement)
            totals = [score_split(r, Window(), scorer=scorer).total for r in tuning.values()]
            trials.append(
                Trial(
                    penalty,
                    threshold,
                    statement,
                    tuple(t.covered / t.answered for t in totals),
                    tuple(t.turns / t.answered for t in totals),
                    tuple(t.must_hits / max(t.must_bursts, 1) for t in totals),
                )
            )
            print(trials[-1].line(), file=sys.stderr, flush=True)
    return trials


def choose(trials: Sequence[Trial]) -> Trial:
    """The trial with the highest mean coverage among those within `MAX_TURNS` on every split
    (the fewest turns on a tie), or among all when none is."""
    fitting = [t for t in trials if t.fits] or list(trials)
    return max(fitting, key=lambda t: (sum(t.coverage), -sum(t.turns)))


def main(argv: Sequence[str] | None = None) -> int:
    """Train, tune and write the weights; return the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the corpus folder")
    parser.add_argument("--out", type=Path, default=OUT, help="where the weights go")
    args = parser.parse_args(argv)
    needed = (TRAIN, *TUNE)
    missing = [s for s in needed if not (args.data / f"{s}.jsonl.gz").is_file()]
    if missing:
        print(f"IRC data not found: no {', '.join(missing)} in {args.data.resolve()}")
        return 2
    xs, ys = examples(load_records(args.data / f"{TRAIN}.jsonl.gz", None))
    print(f"{len(xs)} cues, {int(sum(ys))} answered", file=sys.stderr, flush=True)
    weights = {penalty: fit(xs, ys, penalty) for penalty in PENALTIES}
    tuning = {split: load_records(args.data / f"{split}.jsonl.gz", None) for split in TUNE}
    trials = tune(weights, tuning)
    best = choose(trials)
    print(f"chosen: {best.line()}", file=sys.stderr)
    data = {
        "model": "logistic regression",
        "trained_on": TRAIN,
        "tuned_on": list(TUNE),
        "penalty": best.penalty,
        "threshold": best.threshold,
        "statement_threshold": best.statement_threshold,
        "features": list(FEATURES),
        "weights": weights[best.penalty],
    }
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
