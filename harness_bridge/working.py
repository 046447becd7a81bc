"""The "working" indicator while a model turn answers people, asked of the agent's port: a
turn's events, as the harness holds them (`chat/deliver` params), become the port's
`TurnEvent`s; which events show it, and the `Working` actions themselves, are core's
(`core.indicator`). It never records a disposition, and it is always cleared when the turn
ends, however it ends. `progress` keeps it up while a long turn works, saying on what."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from core.agent_port import AgentPort, TurnEvent
from core.decision import Policy

__all__ = ["progress", "working"]


def _turn_event(event: Mapping[str, Any]) -> TurnEvent:
    conversation, source = event["conversation"], event["source"]
    return TurnEvent(
        event_id=event["eventId"],
        platform=source["platform"],
        conversation=conversation["id"],
        conversation_kind=conversation["kind"],
        policy=Policy(event["attention"]["policy"]),
        thread=conversation.get("threadId"),
        message_id=source.get("messageId"),
    )


async def working(port: AgentPort, events: Iterable[Mapping[str, Any]], on: bool) -> None:
    """Show (`on`) or clear the indicator for the events of a turn that it may answer
    (`must_respond` and `may_respond`), from the moment the turn starts."""
    await port.working([_turn_event(e) for e in events], on)


async def progress(
    port: AgentPort, events: Iterable[Mapping[str, Any]], note: str, step: str
) -> None:
    """Keep the indicator up while a turn works: where it shows words they read
    `core.indicator.STATUS_TEXT (note)`, and where it times out it starts again. Each `step`
    (unique within the turn) is one outbox action; the caller decides how often."""
    await port.progress([_turn_event(e) for e in events], note, step)
