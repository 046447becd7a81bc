"""The "working" indicator as outbound actions: one `Working` per event of a turn that the turn
may answer (`must_respond`, and `may_respond` such as a role mention), never for one that only
wants a reaction or nothing. Each is keyed by event, agent and step, so a retried call queues
nothing twice; each platform's sender shows it its own way. Pure: the agent port queues them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from core.actions import WORKING_TIMEOUT_S, Working
from core.agent_port import TurnEvent
from core.decision import Policy

__all__ = ["STATUS_TEXT", "progress_actions", "working_actions"]

STATUS_TEXT: Final = "is working on it…"
_MAY_ANSWER: Final = frozenset({Policy.MUST_RESPOND, Policy.MAY_RESPOND})


def working_actions(agent: str, events: Sequence[TurnEvent], on: bool) -> list[Working]:
    """Show (`on`) or clear the indicator on those of `events` the turn may answer."""
    return _actions(agent, events, on, STATUS_TEXT, "on" if on else "off")


def progress_actions(
    agent: str, events: Sequence[TurnEvent], note: str, step: str
) -> list[Working]:
    """Keep the indicator up, its words `STATUS_TEXT (note)`; `step` (unique within the turn)
    makes each one its own action, so where the indicator times out it starts again."""
    status = f"{STATUS_TEXT} ({note})" if note else STATUS_TEXT
    return _actions(agent, events, True, status, f"progress:{step}")


def _actions(
    agent: str, events: Sequence[TurnEvent], on: bool, status: str, step: str
) -> list[Working]:
    return [
        Working(
            agent=agent,
            platform=event.platform,
            conversation=event.conversation,
            key=f"{event.event_id}:{agent}:working:{step}",
            on=on,
            status=status if on else "",
            thread=event.thread,
            in_reply_to=event.event_id,
            message_id=event.message_id,
            conversation_kind=event.conversation_kind,
            timeout_s=WORKING_TIMEOUT_S,
        )
        for event in events
        if event.policy in _MAY_ANSWER
    ]
