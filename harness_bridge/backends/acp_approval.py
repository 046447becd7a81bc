"""An ACP agent's permission request that the static `allow` list does not grant, asked of
people in chat through the agent port (`AgentPort.ask`).

The request's choices are the agent's own options of kind `allow_once` and `reject_once`
(never "allow always": each use is asked again); the answer goes back to the agent as the
option pressed, and a refusal by silence (or no approvers) as the agent's `reject_once`
option, or `cancelled` when it offered none. A choice is known to chat by the option's
position in the request, never by the agent's own id: a button carries only what c2a wrote
(an option id may be long or hold any character, and no platform's button takes every
string).
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
        Choice(str(n), o.name, ASKED_KINDS[o.kind])
        for n, o in enumerate(options)
        if o.kind in ASKED_KINDS
    )
    what = tool_call.title or "a tool"
    return Approval(event_id=event_id, text=f"{agent} asks to use {what}.", choices=choices)


def selected(choice: str | None, options: list[PermissionOption]) -> RequestPermissionResponse:
    """The answer selecting the option of `choice` (an `approval_of` choice's id); with None,
    the agent's `reject_once` option, or `cancelled` when it offered none."""
    option_id = options[int(choice)].option_id if choice is not None else None
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
