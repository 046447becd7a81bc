"""Fuzz the `to_me_likely` scorer's boundary (`core.scorer`): a weights file of any shape is
accepted or refused with the project's error, and a question to the room built from any chat
text and any state gives a finite probability, quickly."""

from __future__ import annotations

import math
from typing import Any

from bounds import timed
from hostile_text import texts
from hypothesis import given
from hypothesis import strategies as st

from core.continuity import ROOM_QUESTION, Cue, asks_the_room
from core.errors import C2AError
from core.scorer import FEATURES, Scorer, default_scorer, features

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=len(FEATURES) + 2)
        | st.dictionaries(st.text(max_size=12), inner, max_size=6)
    ),
    max_leaves=40,
)
NEAR = st.fixed_dictionaries(
    {
        "features": st.just(list(FEATURES)) | st.lists(st.sampled_from(FEATURES)),
        "weights": st.lists(st.floats() | st.integers() | st.text(max_size=3), max_size=16),
        "threshold": st.floats() | st.integers() | st.none() | st.text(max_size=3),
    }
)
ANY_INT = st.integers(min_value=-(10**12), max_value=10**12)
ANY_FLOAT = st.floats(allow_nan=False)


@given(JSON | NEAR)
def test_any_weights_file_is_accepted_or_refused_with_the_projects_error(data: Any) -> None:
    try:
        scorer = timed("Scorer.from_data", lambda: Scorer.from_data(data, "w.json"))
    except C2AError as exc:
        refused = str(exc)
    else:
        refused = ""
    if refused:
        assert refused.startswith("w.json: ")
        return
    assert len(scorer.weights) == len(FEATURES)
    assert all(math.isfinite(w) for w in scorer.weights)
    assert 0.0 <= scorer.threshold <= 1.0


@given(
    text=texts(),
    lines=st.tuples(ANY_INT, ANY_INT, ANY_INT),
    counts=st.tuples(ANY_FLOAT, ANY_FLOAT, ANY_FLOAT),
    flags=st.tuples(st.booleans(), st.booleans(), st.booleans()),
)
def test_any_room_question_gets_a_finite_probability_quickly(
    text: str,
    lines: tuple[int, int, int],
    counts: tuple[float, float, float],
    flags: tuple[bool, bool, bool],
) -> None:
    asks = timed("asks_the_room", lambda: asks_the_room(text))
    cue = Cue(
        reason=ROOM_QUESTION,
        lines_since=lines[0],
        seconds_since=counts[0],
        gap=counts[1],
        in_burst=flags[0],
        burst_turned=False,
        agent_spoke_last=flags[1],
        asks=asks,
        exchanged=lines[1],
        agent_lines_since=lines[2],
        activity=counts[2],
        taken_up=counts[2],
        author_lines=lines[0],
        other_partner=flags[2],
        length=len(text),
    )
    numbers = timed("features", lambda: features(cue))
    assert all(math.isfinite(n) for n in numbers)
    probability = timed("probability", lambda: default_scorer().probability(cue))
    assert 0.0 <= probability <= 1.0
