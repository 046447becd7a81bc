"""A model caught repeating itself: where the loop in its text begins.

A small model decoding greedily can fall into a loop ("The answer is: The answer is: ...") and
write it until its token limit; shown in chat, that is a wall of the same words. `loop_start`
finds a text that ends with the same piece written at least `COPIES` times in a row, the
copies together at least `SPAN` characters (so "no, no, no" passes), or a piece of prose (on
one line) at least `SENTENCE` characters long written twice in a row (a sentence said again at
once is no emphasis: "I'm sorry for any misunderstanding. I'm sorry for any
misunderstanding."), and says where the second copy begins (counted from where the repeating
began, which may be inside a copy): the text up to there keeps one copy and drops the rest. A
piece of one character over and over (a rule of dashes, "!!!!") is never a loop. Pure; the
streamed reply asks it after each piece (`harness_bridge.streamed_reply`), so it looks only at
the lengths a copy could have: those at which the text's last `_MARK` characters were written
before (found by the string search, not a loop over all 400 lengths, which cost 1.6 ms a
piece: 19 s of the host's loop for a 12,000-word answer).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

__all__ = ["COPIES", "SENTENCE", "SPAN", "loop_start"]

COPIES: Final = 3
SPAN: Final = 30
SENTENCE: Final = 30
_SHORTEST: Final = 2
_LONGEST: Final = 400  # a longer repeat is not how a small model loops; not looked for
_MARK: Final = 4


def loop_start(text: str) -> int | None:
    """Where the repeated copies at the end of `text` begin, past the first one; None when
    `text` does not end in a loop."""
    end = len(text)
    for size in _sizes(text, min(_LONGEST, (end + 1) // 2)):
        piece = text[end - size :]
        if piece.count(piece[0]) == size:  # one character: a rule or emphasis
            continue
        copies = 1
        while text.endswith(piece, 0, end - copies * size):
            copies += 1
        if (copies >= COPIES and copies * size >= SPAN) or (copies >= 2 and _prose(piece)):
            start = end - (copies - 1) * size
            while start > size and text[start - 1] == text[start - 1 - size]:
                start -= 1  # the loop began with a part of a copy: keep the copy from there
            return start
        if _prose(piece) and piece[0] == " " and text.endswith(piece[1:], 0, end - size):
            return end - size  # said first at the start of the text or of a line: no space
    return None


def _sizes(text: str, longest: int) -> Iterator[int]:
    """The lengths, shortest first and up to `longest`, a copy ending `text` could have: every
    one under `_MARK`, then those at which the last `_MARK` characters stand once more (the
    copy before the last ends with them too)."""
    yield from range(_SHORTEST, min(_MARK, longest + 1))
    end = len(text)
    mark = text[end - _MARK :]
    lowest, below = max(0, end - _MARK - longest), end - _MARK
    while len(mark) == _MARK and (found := text.rfind(mark, lowest, below)) >= 0:
        yield end - _MARK - found
        below = found + _MARK - 1


def _prose(piece: str) -> bool:
    """Whether a piece is long enough, and on one line, to be a sentence said again."""
    return len(piece) >= SENTENCE and "\n" not in piece
