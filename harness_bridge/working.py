"""The "working" indicator while a model turn answers people: Slack's thread status, typing on
Discord and in the web chat. Queued in the outbox like any platform action; it never records a
disposition, and it is always cleared when the turn ends, however it ends."""

from __future__ import annotations

from typing import Any

from core.clock import format_time
from core.engine import Engine

__all__ = ["HARD_TIMEOUT_S", "STATUS_TEXT", "working"]

STATUS_TEXT = "is working on it…"
HARD_TIMEOUT_S = 120


def _action(agent: str, event: dict[str, Any], on: bool) -> dict[str, Any] | None:
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
        return {**base, "thread": thread, "action": "status", "status": STATUS_TEXT if on else ""}
    return None


async def working(engine: Engine, agent: str, events: tuple[dict[str, Any], ...], on: bool) -> None:
    """Show (`on`) or clear the indicator for the must_respond events of a turn."""
    stamp = format_time(engine.clock.now())
    async with engine.store.transaction():
        for event in events:
            if event["attention"]["policy"] != "must_respond":
                continue
            action = _action(agent, event, on)
            if action is None:
                continue
            key = f"{event['eventId']}:{agent}:working:{'on' if on else 'off'}"
            await engine.store.put_outbox(key, agent, {**action, "idempotencyKey": key}, stamp)
