"""Closings and backchannels in the `to_me_likely` band (`core.closings`)."""

from __future__ import annotations

import pytest

from core.closings import is_closing


@pytest.mark.parametrize(
    "text",
    [
        "ok i try",
        "Okey...",
        "yeah",
        "hmm, right",
        "heheheheh",
        "i c",
        "same thing",
        "okay very kool thanks",
        "ok I'll give that a go, thanks",
        "thanks ..i will try and let you all know",
        "alright guys time for me to drive home, bbl",
    ],
)
def test_acknowledgements_and_backchannels_are_closings(text: str) -> None:
    assert is_closing(text)


@pytest.mark.parametrize(
    "text",
    [
        "yes",  # answers the agent's question: it may want to follow up
        "no",
        "ok, and how do I restart it?",
        "it says unit not found",
        "okay so what now",  # no `?`, but not short enough once the words go on
        "ok " + "word " * 20,
        "cooler heads prevail",
    ],
)
def test_questions_answers_and_new_content_are_not(text: str) -> None:
    assert not is_closing(text)
