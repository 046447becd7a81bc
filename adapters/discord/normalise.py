"""Turning one Discord gateway dispatch into a core `ChatEvent`: pure, one parser per wire event.

Nothing here does I/O or reads a clock. `normalise` looks the dispatch name up in `PARSERS`,
whose parsers live by what they parse (`adapters.discord.messages`, `.reactions`, `.channels`);
names not in the table, and messages that are not messages (joins, pins, thread notices), give
`None`. Fields nobody reads are ignored, so new Discord fields never break anything; a field a
parser needs that is missing, of the wrong type, or past the bounds of `adapters.limits` (an
over-long string, an integer past 64 bits, a time outside years 1970-2999) raises `PayloadError`
naming it (`adapters.discord.fields`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final

from adapters.discord.channels import parse_thread_create, parse_thread_update, parse_typing_start
from adapters.discord.messages import (
    parse_message_create,
    parse_message_delete,
    parse_message_delete_bulk,
    parse_message_update,
)
from adapters.discord.reactions import (
    parse_message_reaction_add,
    parse_message_reaction_remove,
    parse_message_reaction_remove_all,
    parse_message_reaction_remove_emoji,
)
from adapters.discord.values import PLATFORM
from core.errors import PayloadError
from core.events import ChatEvent

__all__ = ["CONTENT_MARK", "PARSERS", "PLATFORM", "normalise"]

# Each parser takes its own `TypedDict`; `Any` lets one table hold them all.
PARSERS: Final[Mapping[str, Callable[[Any], ChatEvent | None]]] = {
    "MESSAGE_CREATE": parse_message_create,
    "MESSAGE_UPDATE": parse_message_update,
    "MESSAGE_DELETE": parse_message_delete,
    "MESSAGE_DELETE_BULK": parse_message_delete_bulk,
    "MESSAGE_REACTION_ADD": parse_message_reaction_add,
    "MESSAGE_REACTION_REMOVE": parse_message_reaction_remove,
    "MESSAGE_REACTION_REMOVE_ALL": parse_message_reaction_remove_all,
    "MESSAGE_REACTION_REMOVE_EMOJI": parse_message_reaction_remove_emoji,
    "TYPING_START": parse_typing_start,
    "THREAD_CREATE": parse_thread_create,
    "THREAD_UPDATE": parse_thread_update,
}

CONTENT_MARK: Final = "c2a_content"
"""Key the live adapter adds to a dispatch received without the Message Content intent."""


def normalise(dispatch: Mapping[str, Any]) -> ChatEvent | None:
    """The core event for one gateway dispatch (`{"op": 0, "t": NAME, "d": {...}}`), or `None`.

    `None` for payloads that are not dispatches, dispatch names not in `PARSERS` and updates
    that are not chat events. Raises `PayloadError` (details: `event`, `field`) when a handled
    dispatch lacks a field its parser needs or has one of the wrong type or past its bounds, and
    (details: `field` `""`) when `dispatch` is not an object at all. A dispatch the live
    adapter marked `"c2a_content": "withheld"` (its bot lacks the Message Content intent) gives
    a message with empty text the `content_withheld` flag.
    """
    if not isinstance(dispatch, Mapping):
        raise PayloadError(
            f"Discord dispatch should be an object, not {type(dispatch).__name__}",
            details={"field": ""},
        )
    if dispatch.get("op", 0) != 0:
        return None
    name = dispatch.get("t")
    parser = PARSERS.get(name) if isinstance(name, str) else None
    if parser is None:
        return None
    data = dispatch.get("d")
    if not isinstance(data, Mapping):
        raise PayloadError(
            f"{name} dispatch field 'd' is missing or not an object",
            details={"event": name, "field": "d"},
        )
    event = parser(data)
    if event is not None and not event.text and dispatch.get(CONTENT_MARK) == "withheld":
        return replace(event, content_withheld=True)
    return event
