"""A platform's chat markup, and a message's text made ready for the intent rules.

What a person wrote is read apart from how the platform wrote it down. A platform brings its
markup as a `Markup` table (`core.platform.Platform.markup`): the tokens it writes in angle
brackets (`AngleTokens`: which mention someone, which are custom emoji, which carry a label
that is text), the escapes it writes instead of characters, and whether it has code spans,
quoted lines and `:shortcode:` emoji. A platform with no table reads as plain text
(`PLAIN_TEXT`): links, `@name`s, emoji and emoticons only, since any text may hold those.

`prepare` applies a table, in this order:

1. A message longer than `READ_LIMIT` characters is read by its start, followed by a
   placeholder for the rest.
2. Angle-bracket tokens: a mention is removed, a custom emoji set aside, a labelled link
   becomes its label, anything else (a bare link, a channel, a timestamp) an opaque
   placeholder (content, but no words).
3. Escapes are undone; code spans and code blocks become placeholders; quoted lines
   (`> ...`, and everything after `>>>`) are removed: quoted chat is someone else's words.
4. Bare links become placeholders and `@name` mentions are removed.
5. Emoji (`:shortcodes:`, emoticons like `:)`, unicode emoji) are set aside; ❓ counts as `?`.
6. The text is case-folded and its spaces collapsed, line breaks kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.signals import shortcode_form, unicode_form

__all__ = [
    "CHAT_MARKUP",
    "CODE_BLOCK",
    "CODE_SPAN",
    "ENTITY_ESCAPES",
    "PLACEHOLDER",
    "PLAIN_TEXT",
    "READ_LIMIT",
    "URL",
    "AngleTokens",
    "Markup",
    "prepare",
]

READ_LIMIT = 4_000
"""How much of a message the rules read. What a message asks is said near its start, and no
message a person writes in one go is longer (the longest any chat platform allows); reading
all of a longer one would let a crafted message cost time quadratic in its length in patterns
that look ahead from each match to the end of a line (`deployed ... to x` unless a `?` follows)
and in whatever patterns a manifest adds."""

PLACEHOLDER = "\ue000"
"""What stands for content that has no words: a link, code, a channel, the unread rest."""

ENTITY_ESCAPES: tuple[tuple[str, str], ...] = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))
"""HTML entities for the three characters a markup in angle brackets must escape."""

_EMOTICON = "🙂"
_OPAQUE = f" {PLACEHOLDER} "
_TOKEN = re.compile(r"<([^<>\s][^<>]*)>")
URL = re.compile(r"(?:https?|ftp|mailto):[^\s<>]+")
CODE_BLOCK = re.compile(r"```.*?(?:```|$)", re.S)
CODE_SPAN = re.compile(r"`[^`\n]+`")
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


@dataclass(frozen=True, slots=True)
class AngleTokens:
    """What a `<target|label>` token is on a platform that writes markup in angle brackets.

    Read in this order: a target starting with one of `mentions` (and none of `not_mentions`)
    mentions a person, a role, a group or everyone; one starting with one of `custom_emoji`
    and holding two colons (`<:name:id>`) is a custom emoji; a label is the author's words
    unless the target starts with one of `unlabelled` (a channel's label is only its name);
    anything else is opaque content."""

    mentions: tuple[str, ...] = ()
    not_mentions: tuple[str, ...] = ()
    custom_emoji: tuple[str, ...] = ()
    unlabelled: tuple[str, ...] = ()

    def read(self, match: re.Match[str], emoji: list[str]) -> str:
        """What the token `match` leaves in the text; a custom emoji is added to `emoji`."""
        body = match.group(1)
        target, _, label = body.partition("|")
        if target.startswith(self.mentions) and not target.startswith(self.not_mentions):
            return " "
        if target.startswith(self.custom_emoji) and target.count(":") == 2:
            emoji.append(unicode_form(match.group(0)))
            return " "
        if label and not target.startswith(self.unlabelled):
            return f" {label} "
        return _OPAQUE


@dataclass(frozen=True, slots=True)
class Markup:
    """One platform's chat markup, as `prepare` sets it aside (see the module docstring).

    `tokens`: its angle-bracket tokens, None when `<` is only a character; `escapes`: what it
    writes instead of a character, undone in order after the tokens are read; `code`: backtick
    spans and triple-backtick blocks; `quotes`: `>` lines; `shortcodes`: `:name:` emoji.
    `bold` is for writing, not reading: the mark on either side of bold text ("" for none)."""

    tokens: AngleTokens | None = None
    escapes: tuple[tuple[str, str], ...] = ()
    code: bool = False
    quotes: bool = False
    shortcodes: bool = False
    bold: str = ""


PLAIN_TEXT = Markup()
"""The markup of a platform that brings none: plain text, with links, `@name`s and emoji."""

CHAT_MARKUP = Markup(
    tokens=AngleTokens(
        mentions=("@", "!"),
        not_mentions=("!date",),
        custom_emoji=("a:", ":"),
        unlabelled=("#",),
    ),
    escapes=ENTITY_ESCAPES,
    code=True,
    quotes=True,
    shortcodes=True,
    bold="*",
)
"""Markup in angle brackets (`<@U1>`, `<@U1|name>`, `<@!1>`, `<@&1>`, `<!here>`,
`<!subteam^S1>` mentions, `<!date^...>` and `<t:...>` timestamps, `<#C1|name>` channels,
`<https://x|label>` links, `<:name:id>` and `<a:name:id>` custom emoji), entity escapes,
code, quotes and `:shortcode:` emoji: the union of what the first chat platforms write, which
each of them reads by, so that a message is classified the same whichever carried it. Bold is
`*bold*`, as on Slack; a platform that writes it otherwise replaces `bold`."""


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


def _unmarked(text: str, markup: Markup, emoji: list[str]) -> str:
    """`text` without the platform's own markup (steps 2 and 3 of the module docstring)."""
    tokens = markup.tokens
    if tokens is not None and "<" in text:
        text = _TOKEN.sub(lambda m: tokens.read(m, emoji), text)
    if markup.escapes and "&" in text:
        for escape, character in markup.escapes:
            text = text.replace(escape, character)
    if markup.code and "`" in text:
        text = CODE_SPAN.sub(_OPAQUE, CODE_BLOCK.sub(_OPAQUE, text))
    if markup.quotes and ">" in text:
        text = _unquote(text)
    return text


def prepare(text: str, markup: Markup) -> tuple[str, list[str]]:
    """A message ready for matching: its text, which keeps punctuation, and the emoji set aside.

    Each step runs only when the text holds the character its pattern needs."""
    if len(text) > READ_LIMIT:
        # The placeholder stands for the rest: content, so no rule reads the cut as the end.
        text = f"{text[:READ_LIMIT]} {PLACEHOLDER}"
    emoji: list[str] = []
    text = _unmarked(text, markup, emoji)
    if ":" in text:
        text = URL.sub(_OPAQUE, text)
    if "@" in text:
        text = _PLAIN_MENTION.sub(" ", text)
    if markup.shortcodes and text.count(":") >= 2:
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
