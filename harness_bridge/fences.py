"""Code fences in an answer written as chat text: the block a text leaves open, and the text
with it closed, so an answer cut (at a model's token bound, or where a long reply continues in
a new message) never shows a fence as text nor turns the rest of the page into code.

A fence is a line that starts with three backticks (after blanks) and holds no other three; it
opens a block, and the next one closes it. Three backticks inside a line (inline code, as the
chat platforms read it) open nothing.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["CLOSE", "FENCE", "fences_closed", "open_fence"]

FENCE: Final = "```"
CLOSE: Final = "\n" + FENCE
_LANGUAGE: Final = re.compile(r"[A-Za-z0-9_+.#-]{1,32}")


def open_fence(text: str) -> str | None:
    """The fence that opens the block `text` leaves open, with its language when it names one
    ("```python"); None when every block it opens is closed."""
    fence: str | None = None
    for line in map(str.strip, text.splitlines()):
        if line.startswith(FENCE) and FENCE not in line[len(FENCE) :]:
            fence = None if fence is not None else _opening(line)
    return fence


def fences_closed(text: str) -> str:
    """`text`, with the block it leaves open closed."""
    return text + CLOSE if open_fence(text) is not None else text


def _opening(line: str) -> str:
    language = line[len(FENCE) :].strip()
    return FENCE + language if _LANGUAGE.fullmatch(language) else FENCE
