"""Agents' names as people type them in chat text: `ikonia:`, `Ikonia,`, `@ikonia`, `<ikonia>`.

A manifest gives each agent short names (`agents.<id>.names`). `NameMatcher.find` reads a
message's text and tells, per agent, whether a name of it *addresses* the agent (first in the
message as `name:`/`name,`/`name` followed by words, after a greeting, `@name` or `<name>`
anywhere, or last after a comma: `thanks, name`) or only *mentions* it somewhere in the text.
Case does not matter; a name never counts inside a word, a link, a code span or a code block,
or inside a platform mention (`<@U123>`, which the rules read natively). Names are literal text,
never patterns, so a hostile manifest or message cannot make the search slow.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from core.intent import CODE_BLOCK, CODE_SPAN, URL

__all__ = ["NameMatcher", "Naming"]

_GREETING = r"(?:(?:hey|hi|hello|yo|ok|okay|so|well|and|but|oh)[\s,!]+)?"
_ESCAPES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))
_PLATFORM_MARKUP = re.compile(r"<[@#!][^<>\s]*>")


class Naming(StrEnum):
    """How a message names an agent."""

    ADDRESSED = "addressed"  # spoken to: `name: ...`, `@name`, `<name>`, `thanks, name`
    MENTIONED = "mentioned"  # somewhere in the text, as a word


@dataclass(frozen=True, slots=True)
class NameMatcher:
    """Finds the agents a text names, from each agent's configured names."""

    owners: Mapping[str, str]  # casefolded name -> agent
    anywhere: re.Pattern[str] | None

    @classmethod
    def build(cls, names: Mapping[str, tuple[str, ...]]) -> NameMatcher:
        """A matcher for `{agent: names}`; a name given to two agents counts for the first."""
        owners: dict[str, str] = {}
        for agent, given in names.items():
            for name in given:
                folded = name.strip().casefold()
                if folded:
                    owners.setdefault(folded, agent)
        if not owners:
            return cls({}, None)
        alternatives = "|".join(re.escape(n) for n in sorted(owners, key=len, reverse=True))
        anywhere = re.compile(rf"(?<![\w\-./@]){_NAME.format(alternatives)}(?![\w\-]|\.\w)", re.I)
        return cls(owners, anywhere)

    def find(self, text: str) -> dict[str, Naming]:
        """The agents `text` names, each with how (an address outranks a mention)."""
        if self.anywhere is None or not text:
            return {}
        if "&" in text:
            for escaped, plain in _ESCAPES:
                text = text.replace(escaped, plain)
        if "<" in text:
            text = _PLATFORM_MARKUP.sub(" ", text)
        if "`" in text:
            text = CODE_SPAN.sub(" ", CODE_BLOCK.sub(" ", text))
        if ":" in text:
            text = URL.sub(" ", text)
        found: dict[str, Naming] = {}
        stripped = text.strip()
        for match in self.anywhere.finditer(text):
            agent = self.owners[match.group("name").casefold()]
            how = _how(text, stripped, match)
            if found.get(agent) is not Naming.ADDRESSED:
                found[agent] = how
        return found

    def without(self, text: str) -> str:
        """`text` with the names taken out, for reading its intents: `thanks, iko` is thanks."""
        return self.anywhere.sub(" ", text) if self.anywhere is not None else text


# A name, with `@` before it or `<`...`>` around it allowed; `name` is the bare name.
_NAME = r"(?P<at>@)?(?P<open><)?(?P<name>{0})(?P<close>>)?"
_START = re.compile(r"^\W*" + _GREETING + r"$", re.I)
_AFTER_START = re.compile(r"^\s*(?:[:,>]|\s\S|$)")
_END = re.compile(r"^[\s.!?]*$")


def _how(text: str, stripped: str, match: re.Match[str]) -> Naming:
    if match.group("at") or (match.group("open") and match.group("close")):
        return Naming.ADDRESSED
    before, after = text[: match.start()], text[match.end() :]
    if _START.match(before) and _AFTER_START.match(after):
        return Naming.ADDRESSED
    if before.rstrip().endswith(",") and _END.match(after):
        return Naming.ADDRESSED
    return Naming.MENTIONED
