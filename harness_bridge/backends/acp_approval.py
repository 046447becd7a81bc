"""An ACP agent's permission request that the static `allow` list does not grant, asked of
people in chat through the agent port (`AgentPort.ask`).

The request's choices are the agent's own options of kind `allow_once` and `reject_once`
(never "allow always": each use is asked again); the answer goes back to the agent as the
option pressed, and a refusal by silence (or no approvers) as the agent's `reject_once`
option, or `cancelled` when it offered none.
"""

from __future__ import annotations

from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from core.actions import Choice
from core.agent_port import AgentPort
from core.asking import Approval

__all__ = ["ASKED_KINDS", "approval_of", "ask_in_chat", "selected"]

ASKED_KINDS = {"allow_once": True, "reject_once": False}


def approval_of(
    agent: str, event_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
) -> Approval:
    """The question people are asked for one permission request of `agent`'s."""
    choices = tuple(
        Choice(o.option_id, o.name, ASKED_KINDS[o.kind]) for o in options if o.kind in ASKED_KINDS
    )
    what = tool_call.title or "a tool"
    return Approval(event_id=event_id, text=f"{agent} asks to use {what}.", choices=choices)


def selected(option_id: str | None, options: list[PermissionOption]) -> RequestPermissionResponse:
    """The answer selecting `option_id`; with None, the agent's `reject_once` option, or
    `cancelled` when it offered none."""
    if option_id is None:
        option_id = next((o.option_id for o in options if o.kind == "reject_once"), None)
    if option_id is None:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
    return RequestPermissionResponse(
        outcome=AllowedOutcome(outcome="selected", option_id=option_id)
    )


async def ask_in_chat(
    port: AgentPort, event_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
) -> RequestPermissionResponse:
    """Ask the agent's approvers about the request in the conversation of `event_id`."""
    approval = approval_of(port.agent, event_id, tool_call, options)
    if not any(c.allow for c in approval.choices):
        return selected(None, options)
    verdict = await port.ask(approval)
    return selected(verdict.choice.id if verdict.choice else None, options)
