"""The client side of the Agent Client Protocol, as the host offers it to an ACP agent: the
answers to permission requests, progress read from `session/update`, and a best-effort
`session/cancel`. The agent gets no files and no terminals. A permission the static `allow`
list does not grant is asked of people in chat (`harness_bridge.backends.acp_approval`).

`harness_bridge.backends.acp` runs the turns; what the agent calls reaches it through
`Listener`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Protocol

from acp import RequestError
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)

__all__ = [
    "CANCEL_SEND_TIMEOUT_S",
    "AgentSide",
    "Listener",
    "PermissionPolicy",
    "cancel",
    "progress_note",
]

log = logging.getLogger(__name__)

CANCEL_SEND_TIMEOUT_S = 5.0

# What a tool call of each ACP kind is doing, for the platform's status.
_DOING = {
    "read": "reading",
    "edit": "editing",
    "delete": "deleting",
    "move": "moving files",
    "search": "searching",
    "execute": "running a command",
    "think": "thinking",
    "fetch": "fetching",
}


class PermissionPolicy:
    """Answers `session/request_permission`: a tool named in `allow` is allowed once; anything
    else is rejected."""

    def __init__(self, allow: list[str]) -> None:
        self.allow = frozenset(allow)

    def allows(self, tool_call: ToolCallUpdate) -> bool:
        return tool_call.title is not None and tool_call.title in self.allow

    def answer(
        self, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        kind = "allow_once" if self.allows(tool_call) else "reject_once"
        for option in options:
            if option.kind == kind:
                return RequestPermissionResponse(
                    outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
                )
        # No option of the wanted kind: refuse without choosing anything.
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


def progress_note(update: Any) -> str | None:
    """What a `session/update` says the agent is doing, in a few words for the platform's
    status; None for updates that are not progress (history replayed by `session/load`,
    commands, modes, usage)."""
    if isinstance(update, AgentMessageChunk):
        return "writing"
    if isinstance(update, AgentThoughtChunk):
        return "thinking"
    if isinstance(update, ToolCallStart | ToolCallProgress):
        return _DOING.get(update.kind or "", "using a tool")
    if isinstance(update, AgentPlanUpdate) and update.entries:
        done = sum(entry.status == "completed" for entry in update.entries)
        total = len(update.entries)
        return f"step {min(done + 1, total)} of {total}"
    return None


class Listener(Protocol):
    """What runs the agent's turns: it answers permissions and hears every session update."""

    async def permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        """The answer to one `session/request_permission` of session `session_id`."""
        ...

    async def updated(self, session_id: str, update: Any) -> None:
        """One `session/update` of session `session_id`."""
        ...


class AgentSide:
    """The client side the agent calls: permissions and session updates; no files, no
    terminals."""

    def __init__(self, loop: Listener) -> None:
        self._loop = loop

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        answer = await self._loop.permission(session_id, tool_call, options)
        log.info(
            "acp permission for %s in %s: %s",
            tool_call.title,
            session_id,
            answer.outcome.outcome,
        )
        return answer

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        await self._loop.updated(session_id, update)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None


async def cancel(conn: ClientSideConnection, session_id: str) -> None:
    """`session/cancel`, best effort: the agent may be gone."""
    with contextlib.suppress(Exception):
        await asyncio.shield(
            asyncio.wait_for(conn.cancel(session_id=session_id), CANCEL_SEND_TIMEOUT_S)
        )
