"""A model's loop is found where its copies begin, and ordinary text, emphasis and rules are
left alone; looking only at the lengths a copy could have finds what trying every one does."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def every_length(text: str) -> int | None:
    """`loop_start` as first written: every length from 2 to 400 tried in turn (1.6 ms a call)."""
    end = len(text)
    for size in range(2, min(400, (end + 1) // 2) + 1):
        piece = text[end - size :]
        if piece.count(piece[0]) == size:
            continue
        copies = 1
        while text.endswith(piece, 0, end - copies * size):
            copies += 1
        if (copies >= 3 and copies * size >= 30) or (copies >= 2 and _prose(piece)):
            start = end - (copies - 1) * size
            while start > size and text[start - 1] == text[start - 1 - size]:
                start -= 1
            return start
        if _prose(piece) and piece[0] == " " and text.endswith(piece[1:], 0, end - size):
            return end - size
    return None


def _prose(piece: str) -> bool:
    return len(piece) >= 30 and "\n" not in piece


WORDS = st.sampled_from(["no", "ok", "a", " ", ", ", "the answer", "is", ".", "\n", "I'm sorry"])


@given(
    head=st.lists(WORDS, max_size=30),
    copy=st.lists(WORDS, min_size=1, max_size=12),
    copies=st.integers(min_value=1, max_value=6),
    tail=st.lists(WORDS, max_size=3),
)
@settings(max_examples=500, deadline=None)
def test_it_finds_what_trying_every_length_finds(
    head: list[str], copy: list[str], copies: int, tail: list[str]
) -> None:
    text = "".join(head) + "".join(copy) * copies + "".join(tail)
    assert loop_start(text) == every_length(text)
