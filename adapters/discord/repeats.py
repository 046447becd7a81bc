"""How the copies of one Discord message each agent's bot receives are known without
normalising them (`core.platform.Repeats`).

Every bot in a guild gets its own gateway dispatch of a message posted there, the same for
all of them but for what a bot may not read: without the Message Content intent a bot the
message does not name gets its text, attachments and embeds blank. So only a `MESSAGE_CREATE`
whose text is there is keyed (by the message id): every copy with text carries the whole
message. Updates, whose id repeats from edit to edit, and anything else get None.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from adapters.discord.normalise import CONTENT_MARK
from core.platform import Repeats

__all__ = ["REPEATS", "repeat_key"]


def repeat_key(dispatch: Mapping[str, Any]) -> str | None:
    """The key every bot's copy of one created message shares, or None when unsure."""
    if dispatch.get("t") != "MESSAGE_CREATE" or dispatch.get("op", 0) != 0:
        return None
    if CONTENT_MARK in dispatch:
        return None
    data = dispatch.get("d")
    if not isinstance(data, dict):
        return None
    message_id, content = data.get("id"), data.get("content")
    if type(message_id) is not str or type(content) is not str or not content:
        return None
    return f"MESSAGE_CREATE {message_id}"


REPEATS: Final = Repeats(repeat_key)
