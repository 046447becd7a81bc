"""What a chat message asks for, read by deterministic, documented rules: intents and topics.

The host needs a few cheap facts about a message before it spends a model turn on it: is it only
thanks (never answered, spec 001), does it ask the agent to leave or stop, is it urgent. An
`IntentClassifier` answers with a set of `Intent`s; `IntentRules` is the default implementation,
built from the explicit phrase and pattern tables of `core.intent_tables` (where `Intent` is
defined; both are re-exported here), which a workspace manifest can extend
(`IntentRules.with_overrides`, `core.intent_overrides`). Where the words, clauses and keywords
of a prepared text are is `core.intent_words`; a knock's topic from the intents is
`core.intent_topic` (`topic`, re-exported here).

How `IntentRules` reads a message, in order:

1. Preparation (`core.markup.prepare`). The platform's markup (`IntentRules.markups`, by
   platform name, which each adapter brings; plain text for a platform that brings none) is
   set aside: mentions removed, links, code and timestamps made opaque placeholders (content,
   but no words), quoted lines removed (quoted chat is someone else's words, not this
   author's request), emoji set aside, ❓ read as `?`; the text is case-folded. A message
   longer than `READ_LIMIT` characters is read by its start.
2. Thanks. The message is *thanks* when it has no `?` and either every remaining word is
   covered by the thanks vocabulary (phrases and patterns of `Intent.THANKS`; emoji then do not
   matter), or it has no words and only emoji from `GRATITUDE_EMOJI`. Thanks is exclusive: a
   message that is only thanks has no other intent (`thanks!!!` is not urgent). A message of
   only mentions has no intent at all: it is a ping.
   A message with no `?` that no rule of step 3 gives an intent is thanks too when it is a
   closing with words of its own (`core.intent_closings`: `thanks, might give it another go`,
   `ok I'll try that`, `I solved it`, `I'll /msg you`): a question or a request always wins.
3. Every other intent fires when one of its phrases occurs as whole words, or one of its
   patterns matches (`re.search` on the prepared text, which keeps punctuation and line
   breaks; `^`/`$` are the message's start and end). Two guards apply to phrases only, not to
   patterns, which carry their own context:

   - negation: a phrase is ignored when one of the two words before it in the same clause is a
     negator (`I'm not blocked`, `not urgent`, `don't leave`);
   - questions: for `APPROVAL`, `BLOCKER` and `STATUS`, a phrase in a question is ignored when
     the sentence opens with an interrogative or the phrase is in its last clause (`is it
     approved?`, `should I ship it?`, `blocked?`), because asking about a thing is not
     reporting it. `I'm blocked, can you help?` is still a blocker.

Decisions worth knowing: `stop` fires only on an imperative at the start of the message (after
greetings like `hey,`): the whole message is a bare command (`stop`, `cancel that`, `never mind`)
or starts `stop/cancel/abort/halt working on|the|that|...`; a bare imperative followed by a `?`
is musing, not an order (`stop the deploy at 5pm? no wait`), while `can you stop ...?` is an
order. `cancel the meeting` is a stop: the intent says something is to be stopped, not what.
`leave` never fires on `please leave a review`.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from core.intent_closings import is_closing
from core.intent_overrides import normalise_phrase, overridden
from core.intent_tables import (
    DEFAULT_PATTERNS,
    DEFAULT_PHRASES,
    GRATITUDE_EMOJI,
    NEGATORS,
    PATTERN_KEYWORDS,
    Intent,
)
from core.intent_topic import TOPIC_PRIORITY, topic
from core.intent_words import RUN, Keywords, Marks, any_of
from core.intent_words import phrase_keywords as _phrase_keywords
from core.intent_words import runs as _runs
from core.intent_words import words as _words
from core.markup import CODE_BLOCK, CODE_SPAN, PLAIN_TEXT, READ_LIMIT, URL, Markup, prepare

__all__ = [
    "CODE_BLOCK",
    "CODE_SPAN",
    "DEFAULT_PATTERNS",
    "DEFAULT_PHRASES",
    "DEFAULT_RULES",
    "GRATITUDE_EMOJI",
    "NEGATORS",
    "READ_LIMIT",
    "TOPIC_PRIORITY",
    "URL",
    "Intent",
    "IntentClassifier",
    "IntentRules",
    "rules_for",
    "topic",
]


class IntentClassifier(Protocol):
    """Reads the intents of one message's text, written in the markup of its `platform`.

    An implementation must be pure and deterministic (same text and platform, same answer; no
    I/O, no clock, no state between calls), must never raise on any `str`, however malformed,
    and must take time at most linear in its length, however crafted.
    """

    def classify(self, text: str, platform: str) -> frozenset[Intent]:
        """The intents of `text`, sent on `platform`; empty when none apply."""
        ...

    def has(self, text: str, intent: Intent, platform: str) -> bool:
        """Whether `intent` is one of `classify(text, platform)`: an implementation may read
        that one intent alone, which costs less than reading them all."""
        ...


# Phrases of these intents do not count inside a question about them.
_NOT_IN_QUESTIONS = frozenset({Intent.APPROVAL, Intent.BLOCKER, Intent.STATUS})

_THANKS = Intent.THANKS
_ONLY_THANKS = frozenset({_THANKS})


def _phrase_regex(phrases: Sequence[str]) -> re.Pattern[str] | None:
    if not phrases:
        return None
    parts = sorted(
        (r"\s+".join(re.escape(w) for w in p.split()) for p in phrases), key=len, reverse=True
    )
    return re.compile(r"(?<![\w'\-])(?:" + "|".join(parts) + r")(?![\w'])")


def _thanks_regex(vocabulary: list[str]) -> re.Pattern[str]:
    """Thanks vocabulary as one regex, the longest first, matching whole words."""
    vocabulary = sorted(vocabulary, key=len, reverse=True)
    return _compile(Intent.THANKS, r"(?<!\S)(?:" + ("|".join(vocabulary) or r"(?!)") + r")(?!\S)")


def _compile(intent: Intent, pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as error:
        raise ValueError(
            f"invalid pattern {pattern!r} for intent {intent.value}: {error}"
        ) from None


@dataclass(frozen=True, slots=True)
class _Check:
    """How `classify` tests one intent other than thanks; `keywords`: those of all its regexes."""

    intent: Intent
    keywords: Keywords
    patterns: tuple[tuple[re.Pattern[str], Keywords], ...]
    phrases: re.Pattern[str] | None
    phrase_keywords: Keywords
    phrases_in_questions: bool  # whether a phrase still counts in a question about it


@dataclass(frozen=True, slots=True)
class _Compiled:
    """`IntentRules` ready for `classify`."""

    checks: tuple[_Check, ...]
    by_intent: Mapping[Intent, _Check]  # the same checks, by intent (every one but thanks)
    unknown_keywords: tuple[_Check, ...]  # the checks to run even when no keyword is present
    keyword_words: frozenset[str]
    keyword_literals: tuple[str, ...]
    thanks_vocabulary: re.Pattern[str]
    # For a quick refusal: the vocabulary's phrases start with these words (dotless i read as
    # `i`), and these are its patterns alone.
    thanks_first_words: frozenset[str]
    thanks_patterns: re.Pattern[str]

    def present(self, text: str, runs: list[str]) -> frozenset[str]:
        """The keywords present in `text`, whose `_runs` are `runs`."""
        present = self.keyword_words.intersection(runs)
        for literal in self.keyword_literals:
            if literal in text:
                present |= {literal}
        return present


@dataclass(frozen=True, slots=True)
class IntentRules:
    """The default `IntentClassifier`: explicit phrase and pattern tables per intent.

    `phrases[intent]` are matched as whole words, case-insensitively, `patterns[intent]` are
    regular expressions (for `THANKS`, both are vocabulary that must cover the whole message).
    Construction compiles everything; a bad pattern raises ValueError naming it.

    For speed, `classify` first looks for a keyword of each pattern and phrase table (a literal
    the regex cannot match without) and skips the regex when there is none; the result is the
    same as searching every regex.
    """

    phrases: Mapping[Intent, tuple[str, ...]] = field(default_factory=lambda: DEFAULT_PHRASES)
    patterns: Mapping[Intent, tuple[str, ...]] = field(default_factory=lambda: DEFAULT_PATTERNS)
    negators: frozenset[str] = NEGATORS
    gratitude_emoji: frozenset[str] = GRATITUDE_EMOJI
    markups: Mapping[str, Markup] = field(default_factory=dict, compare=False)
    _compiled: _Compiled = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        phrases = {i: tuple(normalise_phrase(p) for p in self.phrases.get(i, ())) for i in Intent}
        patterns = {i: tuple(self.patterns.get(i, ())) for i in Intent}
        thanks_phrases = [
            r"\s+".join(re.escape(w) for w in p.split()) for p in phrases[Intent.THANKS]
        ]
        thanks_patterns = [f"(?:{p})" for p in patterns[Intent.THANKS]]
        compiled_patterns = {i: tuple(_compile(i, p) for p in patterns[i]) for i in Intent}
        checks = []
        for i in Intent:
            if i is Intent.THANKS:
                continue
            gated = tuple((p, PATTERN_KEYWORDS.get(p.pattern)) for p in compiled_patterns[i])
            phrase_regex = _phrase_regex(phrases[i])
            phrase_keywords = _phrase_keywords(phrases[i])
            keywords = [k for _, k in gated] + ([phrase_keywords] if phrase_regex else [])
            checks.append(
                _Check(
                    intent=i,
                    keywords=any_of(keywords),
                    patterns=gated,
                    phrases=phrase_regex,
                    phrase_keywords=phrase_keywords,
                    phrases_in_questions=i not in _NOT_IN_QUESTIONS,
                )
            )
        every = {k for c in checks for _, keywords in c.patterns for k in keywords or ()}
        every.update(k for c in checks for k in c.phrase_keywords or ())
        compiled = _Compiled(
            checks=tuple(checks),
            by_intent={c.intent: c for c in checks},
            unknown_keywords=tuple(c for c in checks if c.keywords is None),
            keyword_words=frozenset(k for k in every if RUN.fullmatch(k)),
            keyword_literals=tuple(sorted(k for k in every if not RUN.fullmatch(k))),
            thanks_vocabulary=_thanks_regex(thanks_phrases + thanks_patterns),
            thanks_first_words=frozenset(
                p.split()[0].replace("\u0131", "i") for p in phrases[Intent.THANKS] if p
            ),
            thanks_patterns=_thanks_regex(thanks_patterns),
        )
        object.__setattr__(self, "phrases", MappingProxyType(phrases))
        object.__setattr__(self, "patterns", MappingProxyType(patterns))
        object.__setattr__(self, "_compiled", compiled)

    def classify(self, text: str, platform: str) -> frozenset[Intent]:
        """The intents of `text`, in `platform`'s markup, by the rules in the module docstring;
        never raises."""
        read = self._read(text, platform)
        if read is None:
            return _ONLY_THANKS
        text, present = read
        compiled = self._compiled
        found = frozenset(
            [
                c.intent
                for c in (compiled.checks if present else compiled.unknown_keywords)
                if self._applies(c, text, present)
            ]
        )
        return found or (_ONLY_THANKS if _closing(text) else found)

    def has(self, text: str, intent: Intent, platform: str) -> bool:
        """`intent in self.classify(text, platform)`, testing only that intent's check, and
        whether the message is only thanks (which leaves thanks its one intent) only when the
        check passes."""
        text, emoji = self._prepare(text, platform)
        runs = _runs(text)
        compiled = self._compiled
        if intent is _THANKS:
            if self._only_thanks(text, runs, emoji):
                return True
            present = compiled.present(text, runs)
            return _closing(text) and not any(
                self._applies(c, text, present) for c in compiled.checks
            )
        return self._applies(
            compiled.by_intent[intent], text, compiled.present(text, runs)
        ) and not self._only_thanks(text, runs, emoji)

    def with_markup(self, markups: Mapping[str, Markup]) -> IntentRules:
        """These rules reading each platform's text in its markup (`markups`, by platform name;
        a platform not in it reads as plain text), sharing what is already compiled."""
        rules = copy.copy(self)
        object.__setattr__(rules, "markups", MappingProxyType(dict(markups)))
        return rules

    def _prepare(self, text: str, platform: str) -> tuple[str, list[str]]:
        return prepare(text, self.markups.get(platform, PLAIN_TEXT))

    def _read(self, text: str, platform: str) -> tuple[str, frozenset[str]] | None:
        """The text ready for the checks and the keywords present in it; None when the message
        is only thanks (then thanks is its one intent)."""
        text, emoji = self._prepare(text, platform)
        runs = _runs(text)
        if self._only_thanks(text, runs, emoji):
            return None
        return text, self._compiled.present(text, runs)

    def _only_thanks(self, text: str, runs: list[str], emoji: list[str]) -> bool:
        """Whether a prepared message (its `_runs` and emoji set aside) is only thanks."""
        if "?" in text:
            return False
        words = runs if text.isascii() and "'" not in text else _words(text)
        return self._is_thanks(words, emoji)

    def _applies(self, check: _Check, text: str, present: frozenset[str]) -> bool:
        keywords = check.keywords
        return (keywords is None or not keywords.isdisjoint(present)) and self._matches(
            check, text, present
        )

    def with_overrides(self, overrides: Mapping[str, Mapping[str, Sequence[str]]]) -> IntentRules:
        """These rules changed by a manifest's `intent` key (`core.intent_overrides`); raises
        ValueError on a bad override."""
        phrases, patterns = overridden(self.phrases, self.patterns, overrides)
        return IntentRules(
            phrases=phrases,
            patterns=patterns,
            negators=self.negators,
            gratitude_emoji=self.gratitude_emoji,
            markups=self.markups,
        )

    def _is_thanks(self, words: list[str], emoji: list[str]) -> bool:
        """Whether a message without `?`, of these `_words` and `emoji`, is only thanks."""
        if not words:
            return bool(emoji) and all(e in self.gratitude_emoji for e in emoji)
        compiled, joined = self._compiled, " ".join(words)
        # Quick refusal: the vocabulary must match at the start, where (case-insensitively) a
        # phrase can only when its first word is the first word; for ASCII, a set lookup.
        if (
            words[0].isascii()
            and words[0] not in compiled.thanks_first_words
            and not compiled.thanks_patterns.match(joined)
        ):
            return False
        return not compiled.thanks_vocabulary.sub(" ", joined).strip()

    def _matches(self, check: _Check, text: str, present: frozenset[str]) -> bool:
        for pattern, keywords in check.patterns:
            if (keywords is None or not keywords.isdisjoint(present)) and pattern.search(text):
                return True
        regex, keywords = check.phrases, check.phrase_keywords
        if regex is None or (keywords is not None and keywords.isdisjoint(present)):
            return False
        marks: Marks | None = None
        for match in regex.finditer(text):
            marks = marks or Marks.of(text)
            if marks.negated(match.start(), self.negators):
                continue
            if not check.phrases_in_questions and marks.in_question(match.start(), match.end()):
                continue
            return True
        return False


def _closing(text: str) -> bool:
    """Whether a prepared message, given no intent by the checks, is a closing with words."""
    return "?" not in text and is_closing(_words(text))


DEFAULT_RULES = IntentRules()


def rules_for(
    overrides: Mapping[str, Mapping[str, Sequence[str]]], markups: Mapping[str, Markup]
) -> IntentRules:
    """The default rules with a manifest's `intent` overrides, reading its platforms' markup."""
    rules = DEFAULT_RULES.with_overrides(overrides) if overrides else DEFAULT_RULES
    return rules.with_markup(markups)
