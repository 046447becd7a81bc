"""What one raw gateway message becomes for a connection: a queued `Item`, or nothing. Pure.

A dispatch is queued with where its session stands once it is handled (`GatewaySession`, the
mark the ledger keeps); it carries its frame only when the normaliser reads it and it is from
the connection's guild. A READY or RESUMED starts a session: when it replaces a kept one that was
lost, its item says from when to catch up from history.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from adapters.discord.normalise import CONTENT_MARK, PARSERS
from core.store import GatewaySession

__all__ = ["FORWARDED", "Item", "to_item", "withheld"]

FORWARDED: Final = frozenset(PARSERS)
"""The dispatch names handed to `receive`: exactly those the normaliser reads."""

_DISPATCH: Final = 0
_SESSION_STARTS: Final = frozenset({"READY", "RESUMED"})
_SEQ_LIMIT: Final = 1 << 63  # what the ledger's INTEGER holds
_TEXT_DISPATCHES: Final = frozenset({"MESSAGE_CREATE", "MESSAGE_UPDATE"})


@dataclass(frozen=True, slots=True)
class Item:
    """One queued dispatch: the frame to hand over (None for one the normaliser does not read),
    where the session stands once it is handled, and, for the READY of a session that replaced
    a lost one, the time to catch up from."""

    frame: dict[str, Any] | None
    mark: GatewaySession
    catch_up_since: str | None = None


def to_item(
    frame: object,
    agent: str,
    shard: int,
    socket_session: object,
    socket_url: str,
    kept: Mapping[int, GatewaySession],
    guild_id: str | None,
) -> Item | None:
    """The item for one decoded gateway message on `shard` (its socket's session and URL), or
    None when it is no dispatch or carries no sequence a RESUME could be asked from."""
    if not isinstance(frame, dict) or frame.get("op") != _DISPATCH:
        return None
    name, data, seq = frame.get("t"), frame.get("d"), frame.get("s")
    name = name if isinstance(name, str) else None
    data = data if isinstance(data, dict) else {}
    if type(seq) is not int or not 0 < seq < _SEQ_LIMIT:
        return None
    session: object = socket_session
    url: object = socket_url
    if name == "READY":  # discord.py reads these from READY after the connection takes it
        session, url = data.get("session_id"), data.get("resume_gateway_url")
    if not isinstance(session, str) or not isinstance(url, str):
        return None
    mark = GatewaySession(agent, shard, session, url, seq, "")
    if name in _SESSION_STARTS:
        lost = kept.get(shard)
        since = lost.updated_at if lost is not None and lost.session_id != session else None
        return Item(None, mark, since)
    guild = data.get("guild_id")
    ours = guild_id is None or guild is None or guild == guild_id
    forwarded = name in FORWARDED and ours  # another server this bot is in: not ours
    return Item(frame if forwarded else None, mark)


def withheld(frame: dict[str, Any]) -> dict[str, Any]:
    """`frame` as received without the Message Content intent: a message's blank text is then
    not the message, and the normaliser is told so (`CONTENT_MARK`)."""
    if frame.get("t") in _TEXT_DISPATCHES:
        return {**frame, CONTENT_MARK: "withheld"}
    return frame
