"""A model's loop is found where its copies begin, and ordinary text, emphasis and rules are
left alone."""

from __future__ import annotations

import pytest

from harness_bridge.repetition import loop_start

LOOP = "The answer to this question is: "
SAID = "I'm glad you're enjoying the latest in your favorite podcast. "
CODE = "print('hello, this is a line of code written twice')\n"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (LOOP * 3, LOOP),
        ("Sure. " + LOOP * 5, "Sure. " + LOOP),
        ("A: " * 11, "A: "),
        ("ben: no, " * 4, "ben: no, "),
        (LOOP * 3 + "The", LOOP),  # the copies seen from their end begin inside one
        (SAID * 2, SAID),  # a sentence said again at once
        (LOOP * 2, LOOP),
        ("I'm sorry for any misunderstanding. " * 2, "I'm sorry for any misunderstanding."),
        (
            "I'm sorry for any confusion, my friend. " * 2 + "I",
            "I'm sorry for any confusion, my friend.",
        ),
        (
            "I'm sorry for any misunderstanding. I'm sorry for any misunderstanding.",
            "I'm sorry for any misunderstanding.",
        ),
        (
            "Ok.\nI'm sorry for any misunderstanding. I'm sorry for any misunderstanding.",
            "Ok.\nI'm sorry for any misunderstanding.",
        ),
        ("Sure! " + SAID * 2 + "I'm", "Sure! " + SAID),
    ],
)
def test_a_text_ending_in_a_loop_keeps_one_copy(text: str, kept: str) -> None:
    start = loop_start(text)
    assert start is not None and text[:start].strip() == kept.strip()


@pytest.mark.parametrize(
    "text",
    [
        "The capital of France is Paris.",
        "no, no, no, ",  # three copies, but too short to be a loop
        "Thank you so much! " * 2,  # twice may be meant
        CODE * 2,  # code repeats a line as it needs
        SAID + "And " + SAID,
        LOOP * 3 + "and so on.",  # the loop ended: the text goes on
        "Step one" + "-" * 60,  # a rule
        "Done" + "!" * 40,
        "",
    ],
)
def test_text_that_does_not_end_in_a_loop_is_left_alone(text: str) -> None:
    assert loop_start(text) is None
