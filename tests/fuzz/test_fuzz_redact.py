"""Fuzzing the redactor, the boundary every untrusted text crosses before it is stored, logged
or sent: it raises nothing, finishes within the bound on hostile text (pieces of every secret's
shape, repeated), redacting twice changes nothing more, and a planted secret never survives
whatever surrounds it."""

from __future__ import annotations

from typing import Any

import pytest
from fuzz.bounds import timed
from hypothesis import given
from hypothesis import strategies as st
from secret_samples import AWS_SECRET, CONFIGURED_SECRET, PEM, SECRETS, SHAPES

from core.redact import Redactor, is_secret_name

redactor = Redactor([CONFIGURED_SECRET, "another-configured-value"], SHAPES)

PLANTED = [
    *(s for values in SECRETS.values() for s in values),
    PEM,
    CONFIGURED_SECRET,
]
# The pieces each rule looks for, so hostile text keeps the engine trying every pattern.
PIECES = [
    "-----BEGIN ",
    "PRIVATE KEY-----",
    "-----END ",
    "https://hooks.slack.com/services/",
    "https://discord.com/api/webhooks/1234567/",
    "xoxb-",
    "xapp-",
    "sk-",
    "sk-ant-",
    "ghp_",
    "github_pat_",
    "AKIA",
    "aws_secret_access_key=",
    "eyJ",
    ".",
    "Authorization: Bearer ",
    "://",
    "a:",
    "@",
    "password=",
    "token: ",
    "apiKey",
    '"',
    " ",
    "\n",
    "_",
    "-",
    "0123456789",
    "abcdefghijklmnopqrstuvwxyzABCDEF",
    "/+=",
    "[redacted:jwt]",
    AWS_SECRET,
]

mixed = st.builds(
    lambda pieces, times: "".join(pieces) * times,
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=40),
    st.integers(min_value=1, max_value=3000),
)
# One piece over and over (up to 200 kB): where a pattern that backtracks would go quadratic.
runs = st.sampled_from(PIECES).flatmap(
    lambda piece: st.integers(1, 200_000 // len(piece)).map(lambda times: piece * times)
)
hostile = st.builds(lambda run, tail: run + tail, runs, st.sampled_from(["", *PIECES]))
texts = st.one_of(st.text(max_size=400), mixed, hostile)
json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.sampled_from(["token", "text", "apiKey", "user"]) | st.text(), inner)
    ),
    max_leaves=20,
)


@given(texts)
def test_any_text_is_redacted_within_the_bound_and_a_second_pass_changes_nothing(
    text: str,
) -> None:
    once = timed("redacting text", lambda: redactor.text(text))
    assert isinstance(once, str)
    assert timed("redacting again", lambda: redactor.text(once)) == once


@pytest.mark.parametrize("piece", PIECES)
def test_every_piece_repeated_for_200_kb_is_redacted_within_the_bound(piece: str) -> None:
    """The search above may never pick the piece that a slow pattern trips on; this tries
    each, followed by every piece so that every pattern runs."""
    text = piece * (200_000 // len(piece)) + "".join(PIECES)
    timed("redacting a run", lambda: redactor.text(text))


@given(st.text(max_size=200), st.sampled_from(PLANTED), st.text(max_size=200))
def test_a_planted_secret_never_survives_what_surrounds_it(
    before: str, secret: str, after: str
) -> None:
    clean = timed("redacting text", lambda: redactor.text(f"{before} {secret}\n{after}"))
    assert secret not in clean


@given(json_like)
def test_any_json_like_value_is_redacted_within_the_bound(value: Any) -> None:
    clean = timed("redacting a structure", lambda: redactor.data(value))
    if isinstance(value, dict) and len(clean) == len(value):  # no two keys redacted alike
        for key, item in value.items():
            if is_secret_name(str(key)) and item not in (None, "") and not isinstance(item, bool):
                assert clean[redactor.text(str(key))] == "[redacted:secret-field]"
