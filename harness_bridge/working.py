"""The "working" indicator while a model turn answers people: Slack's thread status, typing on
Discord and in the web chat. Queued in the outbox like any platform action; it never records a
disposition, and it is always cleared when the turn ends, however it ends. It shows for every
event the turn may answer (`must_respond`, and `may_respond` such as a role mention), never for
one that only wants a reaction or nothing. `progress` keeps it up while a long turn works,
saying on what."""

from __future__ import annotations

from typing import Any

from core.clock import format_time
from core.engine import Engine

__all__ = ["HARD_TIMEOUT_S", "STATUS_TEXT", "progress", "working"]

STATUS_TEXT = "is working on it…"
HARD_TIMEOUT_S = 120
_MAY_ANSWER = frozenset({"must_respond", "may_respond"})


def _action(
    agent: str, event: dict[str, Any], on: bool, status: str = STATUS_TEXT
) -> dict[str, Any] | None:
    platform = event["source"]["platform"]
    conversation = event["conversation"]
    base = {
        "agent": agent,
        "platform": platform,
        "conversation": conversation["id"],
        "thread": conversation.get("threadId"),
        "inReplyTo": event["eventId"],
        "messageId": event["source"].get("messageId"),
    }
    if platform in ("discord", "webchat"):
        return {
            **base,
            "action": "typing",
            "state": "start" if on else "stop",
            "timeoutSeconds": HARD_TIMEOUT_S,
        }
    if platform == "slack" and conversation["kind"] != "dm":
        # Slack shows a status only in a thread: the event's thread, or the one the reply opens.
        thread = conversation.get("threadId") or event["source"].get("messageId")
        return {**base, "thread": thread, "action": "status", "status": status if on else ""}
    return None


async def working(engine: Engine, agent: str, events: tuple[dict[str, Any], ...], on: bool) -> None:
    """Show (`on`) or clear the indicator for the events of a turn that it may answer
    (`must_respond` and `may_respond`), from the moment the turn starts."""
    await _queue(engine, agent, events, on, STATUS_TEXT, "on" if on else "off")


async def progress(
    engine: Engine, agent: str, events: tuple[dict[str, Any], ...], note: str, step: str
) -> None:
    """Keep the indicator up while a turn works: Slack's status reads `STATUS_TEXT (note)`,
    typing starts again if its hard timeout ended it. Each `step` (unique within the turn) is
    one outbox action; the caller decides how often."""
    status = f"{STATUS_TEXT} ({note})" if note else STATUS_TEXT
    await _queue(engine, agent, events, True, status, f"progress:{step}")


async def _queue(
    engine: Engine,
    agent: str,
    events: tuple[dict[str, Any], ...],
    on: bool,
    status: str,
    suffix: str,
) -> None:
    stamp = format_time(engine.clock.now())
    async with engine.store.transaction():
        for event in events:
            if event["attention"]["policy"] not in _MAY_ANSWER:
                continue
            action = _action(agent, event, on, status)
            if action is None:
                continue
            key = f"{event['eventId']}:{agent}:working:{suffix}"
            await engine.queue(key, agent, {**action, "idempotencyKey": key}, stamp)
