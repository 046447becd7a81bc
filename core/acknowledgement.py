"""The fast acknowledgement: the reaction a person sees on a message an agent must answer,
before the agent has said a word.

`seen` when a model turn will take it, `queued` when the agent is over its turn budget,
`blocked` while the agent's harness is down (spec 000's status signals). Pure: the engine
puts the action in the outbox under its key, so a redecided copy never reacts twice.
"""

from __future__ import annotations

from core.actions import React
from core.decision import Decision, InjectionMode, Policy
from core.events import ChatEvent, EventKind
from core.signals import GlyphMap, Signal

__all__ = ["acknowledgement"]

_TURNS = (InjectionMode.BUFFERED, InjectionMode.IMMEDIATE)  # the modes that start a model turn


def acknowledgement(
    event: ChatEvent, decision: Decision, glyphs: GlyphMap, *, down: bool, seen: bool
) -> React | None:
    """The reaction acknowledging `event` for `decision`'s agent, or None when it gets none:
    only a must_respond message with a message id does. `down` says the agent's harness is
    unavailable; `seen` is the workspace's `seen_signal` setting."""
    if (
        decision.policy is not Policy.MUST_RESPOND
        or event.kind is not EventKind.MESSAGE
        or event.message_id is None
    ):
        return None
    if down:
        signal = Signal.BLOCKED
    elif decision.reason == "over_budget":
        signal = Signal.QUEUED
    elif seen and decision.mode in _TURNS:
        signal = Signal.SEEN
    else:
        return None
    return React(
        agent=decision.agent,
        platform=event.platform,
        conversation=event.conversation.id,
        key=f"{decision.idempotency_key}:react:{signal.value}",
        message_id=event.message_id,
        signal=signal,
        emoji=glyphs.native(event.platform, signal),
        event_id=event.event_id,
        placed=frozenset(),  # just told of the message: none of its statuses is on it
    )
