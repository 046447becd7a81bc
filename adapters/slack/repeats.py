"""How the copies of one Slack message the workspace's apps each receive are known without
normalising them (`core.platform.Repeats`).

Each app with a bot in a channel gets its own `event_callback` of a message posted there: the
same inner event, with the app's own `event_id` and `authorizations`. The key is read off the
inner event (team, event type, subtype, channel, `ts`), so an `app_mention` and the `message`
it copies, different payloads of one event, keep their own keys. Only posted messages are
keyed, and only outside Enterprise Grid (where whether the author is external depends on the
installation each copy names); anything else gets None and is normalised.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from adapters.slack.envelope import extract_bot_user_id
from adapters.slack.fields import optional_str
from core.events import ChatEvent
from core.platform import Repeats

__all__ = ["REPEATS", "repeat_key", "restamp"]

_KEYED_TYPES: Final = frozenset({"message", "app_mention"})
# The subtypes of a posted message (`adapters.slack.messages.MESSAGE_PARSERS`): one per `ts`.
_POSTED: Final = frozenset({None, "thread_broadcast", "bot_message", "me_message", "file_share"})


def repeat_key(body: Mapping[str, Any]) -> str | None:
    """The key every app's copy of one posted message shares, or None when unsure."""
    if body.get("type") != "event_callback" or body.get("enterprise_id") is not None:
        return None
    event = body.get("event")
    if not isinstance(event, dict):
        return None
    kind = event.get("type")
    subtype = event.get("subtype")
    if kind not in _KEYED_TYPES or subtype not in _POSTED:
        return None
    team, channel, ts = body.get("team_id"), event.get("channel"), event.get("ts")
    if type(team) is not str or type(channel) is not str or type(ts) is not str:
        return None
    return f"{team} {kind} {subtype or ''} {channel} {ts}"


def restamp(event: ChatEvent, body: Mapping[str, Any]) -> ChatEvent:
    """`event`, of another app's copy, as `body`'s copy says it: the bot it was made for and
    its delivery id; `PayloadError` where normalising `body` would raise it for those."""
    return replace(
        event,
        bot_user_id=extract_bot_user_id(body),
        delivery_id=optional_str(body, "event_id", ""),
    )


REPEATS: Final = Repeats(repeat_key, restamp)
