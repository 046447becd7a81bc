"""Where the words of a prepared message are, for the intent rules (`core.intent`).

A message prepared by `core.markup.prepare` is read three ways: as its words (`words`, for
the thanks vocabulary), as its runs of word characters (`runs`, where a regex's keywords are
looked up before the regex is searched) and as its clauses and sentences (`Marks`, where the
negation and question guards look around a phrase's match).
"""

from __future__ import annotations

import re
import string
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from core.intent_tables import OPENER
from core.markup import PLACEHOLDER

__all__ = ["RUN", "Keywords", "Marks", "any_of", "phrase_keywords", "runs", "words"]

_WORD = re.compile(rf"[\w']+|{PLACEHOLDER}")
# `_WORD` matches with their outer apostrophes stripped, those of only apostrophes left out.
_STRIPPED_WORD = re.compile(rf"\w(?:[\w']*\w)?|{PLACEHOLDER}")
RUN = re.compile(r"\w+")
_CLAUSE_END = re.compile(r"[.,;:!?\n()\[\]]")
_SENTENCE_END = re.compile(r"[.!?\n]")
# An opener at the start of `text[pos:endpos]`, matched in place (`match(text, pos, endpos)`).
_OPENER_AT = re.compile(r"\s*" + OPENER)


def _ascii_table(keep: str) -> bytes:
    r"""A `bytes.translate` table turning every byte into a space but ASCII `\w` and `keep`."""
    kept = (string.ascii_letters + string.digits + "_" + keep).encode()
    return bytes(b if b in kept else 0x20 for b in range(256))


# For ASCII text, translating and splitting finds the same words as `RUN` and `_WORD`, faster.
_RUN_TABLE = _ascii_table("")
_WORD_TABLE = _ascii_table("'")


def words(text: str) -> list[str]:
    """`_WORD` matches in `text` without outer apostrophes; those of only apostrophes left out."""
    if not text.isascii():
        return _STRIPPED_WORD.findall(text)
    found = text.encode().translate(_WORD_TABLE).decode().split()
    return [w for word in found if (w := word.strip("'"))] if "'" in text else found


def runs(text: str) -> list[str]:
    r"""The maximal runs of `\w` in `text`, a dotless i read as `i`: where word keywords are.

    `re.IGNORECASE` lets a pattern's `i` match a dotless i (U+0131), the one case-folded
    character it equates with an ASCII letter, so keywords are compared with it read as `i`.
    """
    if not text.isascii():
        return RUN.findall(text.replace("\u0131", "i"))
    return text.encode().translate(_RUN_TABLE).decode().split()


# Keywords: a regex can only match a text in which one of its keywords is present, a keyword of
# word characters as one of the text's `runs`, any other as a substring. None: not known.
Keywords = frozenset[str] | None


def phrase_keywords(phrases: Sequence[str]) -> Keywords:
    r"""One keyword per phrase: the longest of what any text the phrase matches has.

    That is each run of `\w` in the phrase as a whole run, and each of its words as a substring
    (a keyword when it is more than a run, like `to-do`). None when a phrase has no run.
    """
    keywords = set()
    for phrase in phrases:
        phrase_runs = runs(phrase)
        if not phrase_runs:
            return None
        keywords.add(
            max(phrase_runs + [w for w in phrase.split() if not RUN.fullmatch(w)], key=len)
        )
    return frozenset(keywords)


def any_of(keywords: Sequence[Keywords]) -> Keywords:
    """The keywords of a check that passes when any of these regexes matches."""
    if any(k is None for k in keywords):
        return None
    return frozenset().union(*(k for k in keywords if k is not None))


@dataclass(frozen=True, slots=True)
class Marks:
    """Where a prepared text's clauses and sentences end and where its words are: found once
    per text, so that each phrase match's guards bisect them instead of scanning the text from
    its start (which made a text of many matches cost time quadratic in its length)."""

    text: str
    clause_ends: list[int]  # the positions of `_CLAUSE_END` characters, ascending
    sentence_ends: list[int]  # those of `_SENTENCE_END` characters
    words: list[tuple[int, str]]  # each `_WORD` match: where it starts, what it is
    word_ends: list[int]  # where each of them ends

    @classmethod
    def of(cls, text: str) -> Marks:
        found = list(_WORD.finditer(text))
        return cls(
            text=text,
            clause_ends=[m.start() for m in _CLAUSE_END.finditer(text)],
            sentence_ends=[m.start() for m in _SENTENCE_END.finditer(text)],
            words=[(m.start(), m.group()) for m in found],
            word_ends=[m.end() for m in found],
        )

    @staticmethod
    def after_last(ends: list[int], start: int) -> int:
        """Where the clause or sentence holding `start` begins: after the last end before it.
        (No word crosses it: a phrase match starts after a non-word character.)"""
        index = bisect_left(ends, start)
        return ends[index - 1] + 1 if index else 0

    def negated(self, start: int, negators: Collection[str]) -> bool:
        """Whether one of the two words before `start`, in its clause, is one of `negators`."""
        clause_start = self.after_last(self.clause_ends, start)
        last = bisect_right(self.word_ends, start)
        before = [w for s, w in self.words[max(last - 2, 0) : last] if s >= clause_start]
        return any(word.strip("'") in negators for word in before)

    def in_question(self, start: int, end: int) -> bool:
        """Whether `text[start:end]` sits in a question that asks about it (`core.intent`)."""
        index = bisect_left(self.sentence_ends, end)
        if index == len(self.sentence_ends) or self.text[self.sentence_ends[index]] != "?":
            return False
        sentence_start = self.after_last(self.sentence_ends, start)
        if _OPENER_AT.match(self.text, sentence_start, start):
            return True
        clause = bisect_left(self.clause_ends, end)
        return self.clause_ends[clause] >= self.sentence_ends[index]  # no clause ends before it
