"""One request a browser sends the web chat over its websocket, read defensively: a JSON
object whose fields are checked as they are read, each problem a `ValueError` whose text the
page is shown."""

from __future__ import annotations

import re
from typing import Any, Final

import orjson

from adapters.limits import MAX_TEXT, too_long

__all__ = ["MAX_EMOJI", "BrowserRequest"]

MAX_EMOJI: Final = 32
"""The most characters of a reaction a person adds: an emoji with its modifiers and joiners,
or a name (`:party:`)."""

# White space, control characters and the marks that reorder text: never part of a reaction.
_NOT_IN_EMOJI: Final = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class BrowserRequest:
    """One browser request (`{"op": ..., "as": ..., ...}`); raises `ValueError` when it is not
    a JSON object."""

    def __init__(self, raw: str) -> None:
        try:
            body = orjson.loads(raw)  # strict: text that is not valid Unicode is refused
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise ValueError("a request is a JSON object")
        self.body: dict[str, Any] = body

    def text(self, key: str) -> str:
        """A non-empty string field; raises `ValueError` naming it otherwise."""
        value = self.body.get(key)
        if not isinstance(value, str) or not value:
            raise ValueError(f"{key} must be a non-empty string")
        return value

    def optional(self, key: str) -> str | None:
        """A string field that may be absent or null; raises `ValueError` naming it otherwise."""
        value = self.body.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError(f"{key} must be a string or null")
        return value

    def said(self) -> str:
        """The words of a post or an edit (`text`), without the white space around them;
        raises `ValueError` when nothing is left (a message is never empty: delete it) or when
        they are more than the host takes (`MAX_TEXT`): refused here, not shown and dropped."""
        text = self.text("text").strip()
        if not text:
            raise ValueError("an empty message is not sent")
        if len(text) > MAX_TEXT:
            raise ValueError(f"the message {too_long(text, MAX_TEXT)}")
        return text

    def emoji(self) -> str:
        """The reaction a person adds or takes off (`emoji`): one emoji or a short name, with
        no white space or control characters; raises `ValueError` otherwise."""
        emoji = self.text("emoji")
        if len(emoji) > MAX_EMOJI or _NOT_IN_EMOJI.search(emoji):
            raise ValueError(
                f"emoji must be one emoji or a name of at most {MAX_EMOJI} characters, "
                "without spaces or control characters"
            )
        return emoji
