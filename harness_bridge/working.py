"""The "working" indicator while a model turn answers people: one `Working` action per event,
queued in the outbox like any platform action; each platform's sender shows it its own way.
It never records a disposition, and it is always cleared when the turn ends, however it ends.
It shows for every event the turn may answer (`must_respond`, and `may_respond` such as a role
mention), never for one that only wants a reaction or nothing. `progress` keeps it up while a
long turn works, saying on what."""

from __future__ import annotations

from typing import Any

from core.actions import WORKING_TIMEOUT_S, Working
from core.clock import format_time
from core.engine import Engine

__all__ = ["HARD_TIMEOUT_S", "STATUS_TEXT", "progress", "working"]

STATUS_TEXT = "is working on it…"
HARD_TIMEOUT_S = WORKING_TIMEOUT_S
_MAY_ANSWER = frozenset({"must_respond", "may_respond"})


def _action(agent: str, event: dict[str, Any], on: bool, status: str, key: str) -> Working:
    """The indicator for one event: where it is, the message it answers, and the words a
    platform that shows words shows (none when it is cleared)."""
    conversation = event["conversation"]
    return Working(
        agent=agent,
        platform=event["source"]["platform"],
        conversation=conversation["id"],
        key=key,
        on=on,
        status=status if on else "",
        thread=conversation.get("threadId"),
        in_reply_to=event["eventId"],
        message_id=event["source"].get("messageId"),
        conversation_kind=conversation["kind"],
        timeout_s=HARD_TIMEOUT_S,
    )


async def working(engine: Engine, agent: str, events: tuple[dict[str, Any], ...], on: bool) -> None:
    """Show (`on`) or clear the indicator for the events of a turn that it may answer
    (`must_respond` and `may_respond`), from the moment the turn starts."""
    await _queue(engine, agent, events, on, STATUS_TEXT, "on" if on else "off")


async def progress(
    engine: Engine, agent: str, events: tuple[dict[str, Any], ...], note: str, step: str
) -> None:
    """Keep the indicator up while a turn works: where it shows words they read
    `STATUS_TEXT (note)`, and where it times out it starts again. Each `step` (unique within
    the turn) is one outbox action; the caller decides how often."""
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
            key = f"{event['eventId']}:{agent}:working:{suffix}"
            await engine.queue_action(_action(agent, event, on, status, key), stamp)
