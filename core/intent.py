"""What a chat message asks for, read by deterministic, documented rules: intents and topics.

The host needs a few cheap facts about a message before it spends a model turn on it: is it only
thanks (never answered, spec 001), does it ask the agent to leave or stop, is it urgent. An
`IntentClassifier` answers with a set of `Intent`s; `IntentRules` is the default implementation,
built from the explicit phrase and pattern tables of `core.intent_tables` (where `Intent` is
defined; both are re-exported here), which a workspace manifest can extend
(`IntentRules.with_overrides`).

How `IntentRules` reads a message, in order:

1. Preparation. A message longer than `READ_LIMIT` characters is read by its start, followed by a
   placeholder for the rest. Mentions (`<@U1>`, `<@U1|name>`, `<@!1>`, `<@&1>`, `<!here>`,
   `<!subteam^S1>`, plain `@name`) are removed. A labelled link `<https://x|label>` becomes its
   label; a bare link, a channel reference, a timestamp `<t:...>`, code spans and code blocks each
   become an opaque placeholder (content, but no words). Quoted lines (`> ...`, `>>> ...`) are
   removed: quoted chat is someone else's words, not this author's request. `&lt;`-escapes
   are undone, emoji (unicode, `:shortcodes:`, custom emoji `<:name:id>`, `:)`) are set aside,
   ❓ counts as `?`, and the text is case-folded.
2. Thanks. The message is *thanks* when it has no `?` and either every remaining word is
   covered by the thanks vocabulary (phrases and patterns of `Intent.THANKS`; emoji then do not
   matter), or it has no words and only emoji from `GRATITUDE_EMOJI`. Thanks is exclusive: a
   message that is only thanks has no other intent (`thanks!!!` is not urgent). A message of
   only mentions has no intent at all: it is a ping.
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

import re
import string
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from core.intent_tables import (
    DEFAULT_PATTERNS,
    DEFAULT_PHRASES,
    GRATITUDE_EMOJI,
    NEGATORS,
    OPENER,
    PATTERN_KEYWORDS,
    Intent,
)
from core.signals import shortcode_form, unicode_form

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
    "topic",
]


class IntentClassifier(Protocol):
    """Reads the intents of one message's text.

    An implementation must be pure and deterministic (same text, same answer; no I/O, no
    clock, no state between calls), must never raise on any `str`, however malformed, and must
    take time at most linear in its length, however crafted.
    """

    def classify(self, text: str) -> frozenset[Intent]:
        """The intents of `text`; empty when none apply."""
        ...

    def has(self, text: str, intent: Intent) -> bool:
        """Whether `intent` is one of `classify(text)`: an implementation may read that one
        intent alone, which costs less than reading them all."""
        ...


# Phrases of these intents do not count inside a question about them.
_NOT_IN_QUESTIONS = frozenset({Intent.APPROVAL, Intent.BLOCKER, Intent.STATUS})

_OVERRIDE_KEYS = ("add", "remove", "patterns_add")
_THANKS = Intent.THANKS
_ONLY_THANKS = frozenset({_THANKS})
_PLACEHOLDER = "\ue000"
_EMOTICON = "🙂"

READ_LIMIT = 4_000
"""How much of a message the rules read. What a message asks is said near its start, and no
message a person writes in one go is longer (the longest any chat platform allows); reading
all of a longer one would let a crafted message cost time quadratic in its length in patterns
that look ahead from each match to the end of a line (`deployed ... to x` unless a `?` follows)
and in whatever patterns a manifest adds."""

_MARKUP = re.compile(r"<([^<>\s][^<>]*)>")
_URL = re.compile(r"(?:https?|ftp|mailto):[^\s<>]+")
_CODE_BLOCK = re.compile(r"```.*?(?:```|$)", re.S)
_CODE_SPAN = re.compile(r"`[^`\n]+`")
# Shared with `core.names`, which must not find a name inside a link or code either.
URL, CODE_BLOCK, CODE_SPAN = _URL, _CODE_BLOCK, _CODE_SPAN
_PLAIN_MENTION = re.compile(r"(?<!\S)@[\w.\-]+")
_SHORTCODE = re.compile(r"(?<!\w):([a-z0-9_+'\-]+)(?:::skin-tone-[2-6])?:(?![\w])", re.I)
_EMOTICONS = re.compile(r"(?<!\S)(?:[:;=][-']?[)\]dpD*3]+|<3+|\^_?\^)(?!\S)")
# The first two characters of every emoticon: a cheap test before the slower `_EMOTICONS`.
_EMOTICON_START = re.compile(r"[:;=<^][-'3_^)\]dpD*]")
_EMOJI = re.compile(
    "[\U0001f000-\U0001faff\u2190-\u21ff\u2300-\u23ff\u2460-\u24ff\u25a0-\u27bf\u2b00-\u2bff"
    "\u2934\u2935\u3030\u303d\u3297\u3299\u00a9\u00ae\u203c\u2049\u2122\u2139"
    "\ufe0e\ufe0f\u200d\u20e3]+"
)
_WORD = re.compile(rf"[\w']+|{_PLACEHOLDER}")
# `_WORD` matches with their outer apostrophes stripped, those of only apostrophes left out.
_STRIPPED_WORD = re.compile(rf"\w(?:[\w']*\w)?|{_PLACEHOLDER}")
_RUN = re.compile(r"\w+")


def _ascii_table(keep: str) -> bytes:
    r"""A `bytes.translate` table turning every byte into a space but ASCII `\w` and `keep`."""
    kept = (string.ascii_letters + string.digits + "_" + keep).encode()
    return bytes(b if b in kept else 0x20 for b in range(256))


# For ASCII text, translating and splitting finds the same words as `_RUN` and `_WORD`, faster.
_RUN_TABLE = _ascii_table("")
_WORD_TABLE = _ascii_table("'")
_CLAUSE_END = re.compile(r"[.,;:!?\n()\[\]]")
_SENTENCE_END = re.compile(r"[.!?\n]")
# An opener at the start of `text[pos:endpos]`, matched in place (`match(text, pos, endpos)`).
_OPENER_AT = re.compile(r"\s*" + OPENER)


def _markup(match: re.Match[str], emoji: list[str]) -> str:
    body = match.group(1)
    target, _, label = body.partition("|")
    if target.startswith(("@", "!")) and not target.startswith("!date"):
        return " "  # a mention of a person, role, group or everyone
    if target.startswith(("a:", ":")) and target.count(":") == 2:
        emoji.append(unicode_form(match.group(0)))  # a custom emoji `<:name:id>`
        return " "
    if label and not target.startswith("#"):
        return f" {label} "
    return f" {_PLACEHOLDER} "


def _unquote(text: str) -> str:
    kept: list[str] = []
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith(">>>"):
            break  # a block quote: the rest of the message is quoted
        if not stripped.startswith(">"):
            kept.append(line)
    return "\n".join(kept)


def _set_aside(emoji: list[str], name: str) -> str:
    emoji.append(name)
    return " "


def _unicode_emoji(match: re.Match[str], emoji: list[str]) -> str:
    run = unicode_form(match.group(0)).replace("\u200d", "").replace("\u20e3", "")
    emoji.extend(run)
    return " ? " if ("❓" in run or "❔" in run) else " "


def _prepare(text: str) -> tuple[str, list[str]]:
    """A message ready for matching: its text, which keeps punctuation, and the emoji set aside."""
    if len(text) > READ_LIMIT:
        # The placeholder stands for the rest: content, so no rule reads the cut as the end.
        text = f"{text[:READ_LIMIT]} {_PLACEHOLDER}"
    # Each step runs only when the text holds the character its pattern needs.
    emoji: list[str] = []
    if "<" in text:
        text = _MARKUP.sub(lambda m: _markup(m, emoji), text)
    if "&" in text:
        text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    if "`" in text:
        text = _CODE_BLOCK.sub(f" {_PLACEHOLDER} ", text)
        text = _CODE_SPAN.sub(f" {_PLACEHOLDER} ", text)
    if ">" in text:
        text = _unquote(text)
    if ":" in text:
        text = _URL.sub(f" {_PLACEHOLDER} ", text)
    if "@" in text:
        text = _PLAIN_MENTION.sub(" ", text)
    if text.count(":") >= 2:
        text = _SHORTCODE.sub(lambda m: _set_aside(emoji, shortcode_form(m.group(0))), text)
    if (
        ":" in text or ";" in text or "=" in text or "<" in text or "^" in text
    ) and _EMOTICON_START.search(text):
        text = _EMOTICONS.sub(lambda m: _set_aside(emoji, _EMOTICON), text)
    if not text.isascii():
        text = _EMOJI.sub(lambda m: _unicode_emoji(m, emoji), text)
        text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\uff1f", "?")
    text = text.casefold()
    if "\n" in text:
        lines = (" ".join(line.split()) for line in text.split("\n"))
        text = "\n".join(line for line in lines if line)
    else:
        text = " ".join(text.split())
    return text, emoji


def _words(text: str) -> list[str]:
    """`_WORD` matches in `text` without outer apostrophes; those of only apostrophes left out."""
    if not text.isascii():
        return _STRIPPED_WORD.findall(text)
    words = text.encode().translate(_WORD_TABLE).decode().split()
    return [w for word in words if (w := word.strip("'"))] if "'" in text else words


def _runs(text: str) -> list[str]:
    r"""The maximal runs of `\w` in `text`, a dotless i read as `i`: where word keywords are.

    `re.IGNORECASE` lets a pattern's `i` match a dotless i (U+0131), the one case-folded
    character it equates with an ASCII letter, so keywords are compared with it read as `i`.
    """
    if not text.isascii():
        return _RUN.findall(text.replace("\u0131", "i"))
    return text.encode().translate(_RUN_TABLE).decode().split()


def _normalise_phrase(phrase: str) -> str:
    return " ".join(phrase.casefold().split())


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


# Keywords: a regex can only match a text in which one of its keywords is present, a keyword of
# word characters as one of the text's `_runs`, any other as a substring. None: not known.
_Keywords = frozenset[str] | None


def _phrase_keywords(phrases: Sequence[str]) -> _Keywords:
    r"""One keyword per phrase: the longest of what any text the phrase matches has.

    That is each run of `\w` in the phrase as a whole run, and each of its words as a substring
    (a keyword when it is more than a run, like `to-do`). None when a phrase has no run.
    """
    keywords = set()
    for phrase in phrases:
        runs = _runs(phrase)
        if not runs:
            return None
        keywords.add(max(runs + [w for w in phrase.split() if not _RUN.fullmatch(w)], key=len))
    return frozenset(keywords)


def _any_of(keywords: Sequence[_Keywords]) -> _Keywords:
    if any(k is None for k in keywords):
        return None
    return frozenset().union(*(k for k in keywords if k is not None))


@dataclass(frozen=True, slots=True)
class _Check:
    """How `classify` tests one intent other than thanks; `keywords`: those of all its regexes."""

    intent: Intent
    keywords: _Keywords
    patterns: tuple[tuple[re.Pattern[str], _Keywords], ...]
    phrases: re.Pattern[str] | None
    phrase_keywords: _Keywords
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
    _compiled: _Compiled = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        phrases = {i: tuple(_normalise_phrase(p) for p in self.phrases.get(i, ())) for i in Intent}
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
                    keywords=_any_of(keywords),
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
            keyword_words=frozenset(k for k in every if _RUN.fullmatch(k)),
            keyword_literals=tuple(sorted(k for k in every if not _RUN.fullmatch(k))),
            thanks_vocabulary=_thanks_regex(thanks_phrases + thanks_patterns),
            thanks_first_words=frozenset(
                p.split()[0].replace("\u0131", "i") for p in phrases[Intent.THANKS] if p
            ),
            thanks_patterns=_thanks_regex(thanks_patterns),
        )
        object.__setattr__(self, "phrases", MappingProxyType(phrases))
        object.__setattr__(self, "patterns", MappingProxyType(patterns))
        object.__setattr__(self, "_compiled", compiled)

    def classify(self, text: str) -> frozenset[Intent]:
        """The intents of `text` by the rules in the module docstring; never raises."""
        read = self._read(text)
        if read is None:
            return _ONLY_THANKS
        text, present = read
        compiled = self._compiled
        return frozenset(
            [
                c.intent
                for c in (compiled.checks if present else compiled.unknown_keywords)
                if self._applies(c, text, present)
            ]
        )

    def has(self, text: str, intent: Intent) -> bool:
        """`intent in self.classify(text)`, testing only that intent's check, and whether the
        message is only thanks (which leaves thanks its one intent) only when the check passes."""
        text, emoji = _prepare(text)
        runs = _runs(text)
        if intent is _THANKS:
            return self._only_thanks(text, runs, emoji)
        compiled = self._compiled
        return self._applies(
            compiled.by_intent[intent], text, compiled.present(text, runs)
        ) and not self._only_thanks(text, runs, emoji)

    def _read(self, text: str) -> tuple[str, frozenset[str]] | None:
        """The text ready for the checks and the keywords present in it; None when the message
        is only thanks (then thanks is its one intent)."""
        text, emoji = _prepare(text)
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
        """These rules changed by a manifest's `intent` key; raises ValueError on a bad override.

        Shape: `{"thanks": {"add": ["merci"], "remove": ["cool"]}, "urgent": {"patterns_add":
        ["sev ?[12]"]}}`. `add`/`remove` change phrases, `patterns_add` appends patterns.
        Unknown intents and keys, a bare string instead of a list, removing a phrase that is not
        there, and invalid patterns are refused with a message naming them.
        """
        phrases = {i: list(self.phrases[i]) for i in Intent}
        patterns = {i: list(self.patterns[i]) for i in Intent}
        for name, change in overrides.items():
            if not isinstance(change, Mapping):
                raise ValueError(f"intent.{name} must be a mapping of {', '.join(_OVERRIDE_KEYS)}")
            try:
                intent = Intent(name)
            except ValueError:
                known = ", ".join(i.value for i in Intent)
                raise ValueError(
                    f"unknown intent {name!r} in intent overrides; known intents: {known}"
                ) from None
            for key, values in change.items():
                if key not in _OVERRIDE_KEYS:
                    raise ValueError(
                        f"unknown key {key!r} under intent.{name}; use one of: "
                        + ", ".join(_OVERRIDE_KEYS)
                    )
                if isinstance(values, str) or not all(isinstance(v, str) for v in values):
                    raise ValueError(f"intent.{name}.{key} must be a list of strings")
                for value in values:
                    if not value.strip():
                        raise ValueError(f"intent.{name}.{key} contains an empty entry")
                    if key == "add":
                        phrases[intent].append(_normalise_phrase(value))
                    elif key == "patterns_add":
                        patterns[intent].append(value)
                    elif _normalise_phrase(value) in phrases[intent]:
                        phrases[intent].remove(_normalise_phrase(value))
                    else:
                        raise ValueError(
                            f"intent.{name}.remove: {value!r} is not a phrase of {name}"
                        )
        return IntentRules(
            phrases={i: tuple(dict.fromkeys(p)) for i, p in phrases.items()},
            patterns={i: tuple(p) for i, p in patterns.items()},
            negators=self.negators,
            gratitude_emoji=self.gratitude_emoji,
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
        marks: _Marks | None = None
        for match in regex.finditer(text):
            marks = marks or _Marks.of(text)
            if self._negated(marks, match.start()):
                continue
            if not check.phrases_in_questions and marks.in_question(match.start(), match.end()):
                continue
            return True
        return False

    def _negated(self, marks: _Marks, start: int) -> bool:
        """Whether one of the two words before `start`, in its clause, is a negator."""
        clause_start = marks.after_last(marks.clause_ends, start)
        last = bisect_right(marks.word_ends, start)
        before = [w for s, w in marks.words[max(last - 2, 0) : last] if s >= clause_start]
        return any(word.strip("'") in self.negators for word in before)


@dataclass(frozen=True, slots=True)
class _Marks:
    """Where a prepared text's clauses and sentences end and where its words are: found once
    per text, so that each phrase match's guards bisect them instead of scanning the text from
    its start (which made a text of many matches cost time quadratic in its length)."""

    text: str
    clause_ends: list[int]  # the positions of `_CLAUSE_END` characters, ascending
    sentence_ends: list[int]  # those of `_SENTENCE_END` characters
    words: list[tuple[int, str]]  # each `_WORD` match: where it starts, what it is
    word_ends: list[int]  # where each of them ends

    @classmethod
    def of(cls, text: str) -> _Marks:
        words = list(_WORD.finditer(text))
        return cls(
            text=text,
            clause_ends=[m.start() for m in _CLAUSE_END.finditer(text)],
            sentence_ends=[m.start() for m in _SENTENCE_END.finditer(text)],
            words=[(m.start(), m.group()) for m in words],
            word_ends=[m.end() for m in words],
        )

    @staticmethod
    def after_last(ends: list[int], start: int) -> int:
        """Where the clause or sentence holding `start` begins: after the last end before it.
        (No word crosses it: a phrase match starts after a non-word character.)"""
        index = bisect_left(ends, start)
        return ends[index - 1] + 1 if index else 0

    def in_question(self, start: int, end: int) -> bool:
        """Whether `text[start:end]` sits in a question that asks about it (module docstring)."""
        index = bisect_left(self.sentence_ends, end)
        if index == len(self.sentence_ends) or self.text[self.sentence_ends[index]] != "?":
            return False
        sentence_start = self.after_last(self.sentence_ends, start)
        if _OPENER_AT.match(self.text, sentence_start, start):
            return True
        clause = bisect_left(self.clause_ends, end)
        return self.clause_ends[clause] >= self.sentence_ends[index]  # no clause ends before it


DEFAULT_RULES = IntentRules()

# Highest first: a control request (leave, stop) changes what the agent does at all; then what
# blocks or approves work, new work, questions, broadcasts; thanks last. Urgency is a modifier.
TOPIC_PRIORITY: tuple[Intent, ...] = (
    Intent.LEAVE,
    Intent.STOP,
    Intent.BLOCKER,
    Intent.APPROVAL,
    Intent.ASSIGNMENT,
    Intent.QUESTION,
    Intent.STATUS,
    Intent.THANKS,
)

_TOPIC: Mapping[Intent, tuple[str, str]] = MappingProxyType(
    {
        Intent.LEAVE: ("a", "request to leave"),
        Intent.STOP: ("a", "request to stop"),
        Intent.BLOCKER: ("a", "blocker report"),
        Intent.APPROVAL: ("an", "approval"),
        Intent.ASSIGNMENT: ("an", "assignment"),
        Intent.QUESTION: ("a", "question"),
        Intent.STATUS: ("a", "status update"),
        Intent.THANKS: ("", "thanks or an acknowledgement"),
    }
)


def topic(intents: frozenset[Intent], *, has_files: bool = False, is_reply: bool = False) -> str:
    """A short, host-written description of a message, built only from its intents and flags.

    Never contains a word of the message, so it is safe in a notify knock. The first intent in
    `TOPIC_PRIORITY` names the message; `URGENT` makes it "an urgent ..." (alone, "an urgent
    request"); no intent is "a message" ("a reply" when `is_reply`). " in reply" is appended for
    a reply with intents, " with attachments" when `has_files`.
    """
    main = next((i for i in TOPIC_PRIORITY if i in intents), None)
    if main is None:
        if Intent.URGENT in intents:
            text = "an urgent request"
        else:
            text = "a reply" if is_reply else "a message"
            is_reply = False
    else:
        article, noun = _TOPIC[main]
        if Intent.URGENT in intents and main is not Intent.THANKS:
            text = f"an urgent {noun}"
        else:
            text = f"{article} {noun}".strip()
    if is_reply:
        text += " in reply"
    if has_files:
        text += " with attachments"
    return text
