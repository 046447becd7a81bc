"""The learned scorer of the `to_me_likely` band: is a line to the room for this agent?

Continuity (`core.continuity`) decides by rule the lines that continue a conversation with an
agent (its partner's, the answers to its line to the room, its name in the text, the bot
commands it answers). A question to the room (`?`, anyone, who...) that no rule decided is a
`room_question` cue for every agent, and so is a line that states something (a remark, a problem
report) when no agent has any other cue for it (`room_statement`), with what the engine knows
at decision time: the channel's pace, whether the asker ever talked with the agent, how lately
and how much the agent spoke, how often it took up such questions, whether the asker is new or
busy with another agent. This module turns that into a few numbers (`features`) and weighs
them with a logistic regression trained on real chat (`bench/train_attention.py`, which writes
`scorer_weights.json` beside this file). A question whose probability reaches the threshold, or
a statement whose probability reaches its own (higher) one, is a turn the agent may answer; the
rest is chatter.

It never sees a line an explicit rule decided (a mention, a DM, a reply, a thread, continuity,
a rule that forbids). Plain floats and one `exp` per cue: a few microseconds, and the same
answer for the same cue everywhere.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from operator import mul
from typing import Any, Final

from core.continuity import Cue
from core.errors import C2AError

__all__ = ["FEATURES", "Scorer", "default_scorer", "features"]

WEIGHTS_FILE = "scorer_weights.json"
# Stand-ins for "never": an exchange or an agent line further back than this many lines.
_FAR_LINES = 200
_LOG_FAR = math.log1p(_FAR_LINES)

# The names of `features`, in order; the weights file must list the same.
FEATURES: Final = (
    "bias",
    "log_gap",
    "in_burst",
    "agent_spoke_last",
    "stranger",
    "log_exchanged",
    "log_agent_lines_since",
    "activity",
    "taken_up",
    "log_author_lines",
    "author_new",
    "other_partner",
    "log_length",
    "asks",
)


def _clamp(value: float, low: float, high: float) -> float:
    """`value` within [low, high]; a NaN counts as `low`."""
    return min(max(value, low), high) if not math.isnan(value) else low


def _log_lines(lines: int) -> float:
    return math.log1p(min(lines, _FAR_LINES)) if lines >= 0 else _LOG_FAR


def features(cue: Cue) -> tuple[float, ...]:
    """The numbers the model weighs for one question to the room, in the order of `FEATURES`."""
    return (
        1.0,
        math.log(_clamp(cue.gap, 1.0, 3600.0)),
        1.0 if cue.in_burst else 0.0,
        1.0 if cue.agent_spoke_last else 0.0,
        1.0 if cue.exchanged < 0 else 0.0,
        _log_lines(cue.exchanged),
        _log_lines(cue.agent_lines_since),
        _clamp(cue.activity, 0.0, 20.0) / 10.0,
        _clamp(cue.taken_up, 0.0, 10.0),
        _log_lines(cue.author_lines),
        1.0 if cue.author_lines == 0 else 0.0,
        1.0 if cue.other_partner else 0.0,
        math.log1p(min(cue.length, 4000)) / 4.0,
        1.0 if cue.asks else 0.0,
    )


@dataclass(frozen=True, slots=True)
class Scorer:
    """A logistic regression over `features`, and the probability a turn needs: `threshold`
    for a question to the room, `statement_threshold` for another line."""

    weights: tuple[float, ...]
    threshold: float
    statement_threshold: float = 1.0

    def probability(self, cue: Cue) -> float:
        """How likely the line is for the agent, 0 to 1."""
        z = sum(map(mul, self.weights, features(cue)))
        if z < -60.0:
            return 0.0
        return 1.0 / (1.0 + math.exp(-z))

    def likely(self, cue: Cue) -> bool:
        """Whether the line gets a turn the agent may answer."""
        return self.probability(cue) >= (self.threshold if cue.asks else self.statement_threshold)

    @classmethod
    def from_data(cls, data: Any, where: str) -> Scorer:
        """A scorer from the weights file's JSON (`where` names it in errors)."""
        if not isinstance(data, dict):
            raise C2AError(f"{where}: the scorer's weights must be a JSON object")
        names, weights = data.get("features"), data.get("weights")
        if names != list(FEATURES):
            raise C2AError(
                f"{where}: 'features' must list {len(FEATURES)} names in this order: "
                f"{', '.join(FEATURES)}; the weights were trained for other features"
            )
        if (
            not isinstance(weights, list)
            or len(weights) != len(FEATURES)
            or not all(isinstance(w, int | float) and math.isfinite(w) for w in weights)
        ):
            raise C2AError(f"{where}: 'weights' must be {len(FEATURES)} finite numbers")
        thresholds = [
            _threshold(data, name, where) for name in ("threshold", "statement_threshold")
        ]
        return cls(tuple(float(w) for w in weights), *thresholds)


def _threshold(data: dict[str, Any], name: str, where: str) -> float:
    value = data.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise C2AError(f"{where}: '{name}' must be a number from 0 to 1")
    return float(value)


@cache
def default_scorer() -> Scorer:
    """The scorer shipped with the package, read once."""
    text = resources.files("core").joinpath(WEIGHTS_FILE).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise C2AError(f"core/{WEIGHTS_FILE}: not JSON ({exc})") from None
    return Scorer.from_data(data, f"core/{WEIGHTS_FILE}")
