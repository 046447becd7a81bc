"""How the copies of one Discord event each agent's bot receives are known without
normalising them (`core.platform.Repeats`).

Every bot in a guild gets its own gateway dispatch of a message posted there, the same for
all of them but for what a bot may not read: without the Message Content intent a bot the
message does not name gets its text, attachments and embeds blank. So a `MESSAGE_CREATE` is
keyed (by the message id) only when its text is there: every copy with text carries the whole
message. A reaction dispatch carries no text and nothing a bot may not read, so its copies
are alike byte for byte: it is keyed by its whole data, and two dispatches with one key are
one input to a pure normaliser. Adding a reaction again after taking it off repeats the data
too, and normalises to the same event as before: the host's state, not the normaliser, tells
a second add from a copy of the first (`core.reactions`). Updates, whose id repeats from edit
to edit, and anything else get None.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from adapters.discord.normalise import CONTENT_MARK
from core.platform import Repeats

__all__ = ["REPEATS", "repeat_key"]

_REACTIONS: Final = frozenset(
    {
        "MESSAGE_REACTION_ADD",
        "MESSAGE_REACTION_REMOVE",
        "MESSAGE_REACTION_REMOVE_ALL",
        "MESSAGE_REACTION_REMOVE_EMOJI",
    }
)


def repeat_key(dispatch: Mapping[str, Any]) -> str | None:
    """The key every bot's copy of one created message or one reaction change shares, or
    None when unsure."""
    name = dispatch.get("t")
    if dispatch.get("op", 0) != 0 or CONTENT_MARK in dispatch:
        return None
    data = dispatch.get("d")
    if not isinstance(data, dict):
        return None
    if name == "MESSAGE_CREATE":
        message_id, content = data.get("id"), data.get("content")
        if type(message_id) is not str or type(content) is not str or not content:
            return None
        return f"MESSAGE_CREATE {message_id}"
    if name in _REACTIONS:
        try:
            return f"{name} {orjson.dumps(data).decode()}"
        except orjson.JSONEncodeError:  # past what JSON holds: the normaliser says why
            return None
    return None


REPEATS: Final = Repeats(repeat_key)
