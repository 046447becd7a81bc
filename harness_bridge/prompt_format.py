"""What a rendered event is made of: the fence, the header and knock fields, and untrusted
text cleaned for a prompt; shared by rendering (`harness_bridge.prompt`), reading back
(`harness_bridge.prompt_parse`) and the text reply path (`harness_bridge.text_prompt`).

Chat text is untrusted, so it is fenced. Every line of it is written as `FENCE + line`
(`"│ "`, U+2502 and a space), and no line the renderer writes itself starts with `│`, so chat
can never put anything at column 0, where header fields, `MESSAGE`, `KNOCK`, `C2A EVENT` and
the rules live. The fence has no closing marker to forge: a message block ends at the first
line that is not fenced. Before fencing, text is cleaned:

- every line break a reader might honour (`\\r\\n`, `\\r`, VT, FF, U+001C-U+001E, U+0085,
  U+2028, U+2029) becomes `\\n`, so the fence is applied to every visible line;
- other control characters, bidi embeddings, overrides and isolates (U+202A-U+202E,
  U+2066-U+2069), invisible spaces and joiners that carry no meaning (U+200B, U+2060, U+FEFF,
  U+206A-U+206F, U+FFF9-U+FFFB) and Unicode tag characters (U+E0000-U+E007F, invisible
  "ASCII smuggling") are dropped, and lone surrogates become U+FFFD; ZWJ/ZWNJ and LRM/RLM stay,
  because emoji and right-to-left scripts need them;
- an event shows at most `MAX_TEXT_CHARS` characters of text; the rest is cut and a column-0
  `[truncated N characters]` line (which chat cannot forge) says how much.

Untrusted values that appear inside renderer lines (the display name in `author:`, an emoji or
a thread name in a part description) and every id are cleaned the same way, then flattened to
one line (whitespace runs become one space) and capped at `MAX_VALUE_CHARS`, so none can start
a line.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "FENCE",
    "HEADER_KEYS",
    "KNOCK_KEYS",
    "MAX_TEXT_CHARS",
    "MAX_VALUE_CHARS",
    "clean",
    "one_line",
]

FENCE: Final = "│ "
MAX_TEXT_CHARS: Final = 4000
MAX_VALUE_CHARS: Final = 200

HEADER_KEYS: Final = (
    "event_id",
    "conversation",
    "thread",
    "author",
    "directedness",
    "response_policy",
    "reason",
    "reply_target",
    "priority",
    "claimed_by",
    "supersedes",
    "continues",
    "reminds",
    "late",
)
KNOCK_KEYS: Final = ("from", "where", "directedness", "policy", "priority", "topic", "content")

_BREAKS = re.compile("\r\n|[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_DROP = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u202a-\u202e\u2060\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000e0000-\U000e007f]"
)
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean(text: str) -> str:
    """Line breaks as `\\n` only; invisible and control characters (bar `\\n`, `\\t`) gone."""
    text = _BREAKS.sub("\n", text)
    return _SURROGATE.sub("\ufffd", _DROP.sub("", text))


def one_line(value: str, fallback: str = "-") -> str:
    """A value safe inside a renderer line: cleaned, one line, capped; `fallback` if empty."""
    flat = " ".join(clean(value).split())
    if len(flat) > MAX_VALUE_CHARS:
        flat = flat[:MAX_VALUE_CHARS] + "…"
    return flat or fallback
