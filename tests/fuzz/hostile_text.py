"""Untrusted chat and model text for the fuzz suite: runs of what renderers, splitters and
matchers treat specially, long enough to expose work that grows faster than the text.

`texts()` joins a few runs of pieces, some repeated up to thousands of times, with short random
unicode (no surrogates, as JSON and the platforms deliver none). `hostile(piece, length)` is one
piece repeated to a given length, for the explicit worst cases.
"""

from __future__ import annotations

import operator

from hypothesis import strategies as st

__all__ = ["PIECES", "hostile", "non_blank", "texts"]

PIECES = (
    # whitespace and line ends
    " ", "\n", "\t", "\r\n", "\u00a0", "\u3000", " \n",
    # markdown and mrkdwn marks, alone, doubled and half-closed
    "*", "**", "_", "__", "~", "~~", "`", "``", "```", "```py\n", "\n```\n", "*a ", "**a ",
    "~~a ", "_a ", "`a", "```\n", "# ", "# x ", "- ", "> ", ">>> ", "|", ":", "::", "#",
    # mentions, links and entities
    "<@", "<#", "<!", "<@U111>", "<@&1240000000000000001>", "<!here>", "<#C111|ops>", "@here",
    "<", ">", "&", "&lt;", "&amp", "[", "]", "](", "[x](", "[x](https://x.example/a)",
    "[`a`](https://x.example/)", "<https://x.example/>", "https://x.example/", ":+1:", ":)",
    # unicode: combining marks, joiners, astral characters, right-to-left text and controls
    "e\u0301", "\u0301", "\u200d", "\ufe0f", "😀", "👩\u200d💻", "👍🏽", "\U0001d54f",
    "\u05e9\u05dc\u05d5\u05dd ", "\u0627\u0644\u0639", "\u202e", "\u2066",
    # words, one long word, and phrases the intent rules look for
    "a", "word ", "x" * 97, "not ", "blocked ", "is it approved", "?", "stop ", "thanks ",
    "deployed to a ", "please leave ", "ok, ",
)  # fmt: skip


def texts(max_repeat: int = 2_500, max_runs: int = 12) -> st.SearchStrategy[str]:
    """Texts of up to `max_runs` runs, in any order: one to three pieces, repeated up to
    `max_repeat` times or not at all, or short random unicode."""
    pieces = st.lists(st.sampled_from(PIECES), min_size=1, max_size=3).map("".join)
    # Counts near a platform's limit as often as small ones: that is where splitting turns.
    counts = st.integers(1, max_repeat) | st.sampled_from([max_repeat // 2, max_repeat])
    run = st.builds(operator.mul, pieces, counts)
    return st.lists(st.one_of(run, pieces, st.text(max_size=40)), max_size=max_runs).map("".join)


def hostile(piece: str, length: int) -> str:
    """`piece` repeated to `length` characters, after a letter (so the text itself does not
    open with a fence or a heading)."""
    return ("a" + piece * (length // len(piece) + 1))[:length]


def non_blank(text: str) -> str:
    """`text` without its whitespace: what a splitter must keep, in order."""
    return "".join(text.split())
