"""The `acp` backend: an Agent Client Protocol agent (Claude Code, Codex or Gemini CLI through
their ACP adapters, opencode, ...) as the model loop of a built-in harness.

The agent runs as a subprocess from the `command` in the settings and is spoken to over its
stdio with the ACP SDK (PyPI `agent-client-protocol`). A session is one agent in one
conversation (`session_of`), the same choice as the `openai` backend, so the agent keeps a
conversation's context without mixing conversations. `session/new` passes the agent's chat
tools as a stdio MCP server (`python -m harness_bridge.mcp_server`); the first prompt of a
session carries the standing response rules, then the rendered turn. Permission requests are
answered from the agent's `allow` list of tool names: an allowed tool is allowed once, anything
else is rejected (deny by default; there is no wildcard). Cancelling the task running a turn
sends `session/cancel`. Events arriving mid-turn are not injected (`inject` is False): ACP
agents take them in the next turn.

This is a first slice: sessions are not restored after the agent process restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Mapping
from typing import Any, Literal, cast

from acp import PROTOCOL_VERSION, Client, RequestError, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    Implementation,
    McpServerStdio,
    PermissionOption,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallUpdate,
)
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from core.clock import SystemClock
from core.engine import Engine
from core.wire import parse_deliver
from harness_bridge.backends.openai import TurnResult, session_of
from harness_bridge.backends.registry import settings_error
from harness_bridge.prompt import render_turn
from harness_bridge.runtime import InProcessHarness
from harness_bridge.turns import Turn

__all__ = ["AcpModelLoop", "AcpSettings", "PermissionPolicy", "from_settings"]

log = logging.getLogger(__name__)

MCP_SERVER_NAME = "c2a"


class AcpSettings(BaseModel):
    """`harness: {backend: acp, command: [...], manifest: M, store: LEDGER, allow: [...]}`."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["acp"]
    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    manifest: str = Field(min_length=1)
    store: str = Field(min_length=1)
    cwd: str | None = None
    allow: list[str] = Field(default_factory=list)
    quiet_ms: int = Field(default=3000, ge=0)

    @field_validator("allow")
    @classmethod
    def _no_wildcards(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name or any(c in name for c in "*?[]"):
                raise ValueError(f"{name!r} is not a tool name (wildcards are not allowed)")
        return names


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


class _Client:
    """The client side the agent calls: permissions and session updates; no files, no
    terminals."""

    def __init__(self, loop: AcpModelLoop) -> None:
        self._loop = loop

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        answer = self._loop.policy.answer(tool_call, options)
        log.info(
            "acp permission for %s in %s: %s",
            tool_call.title,
            session_id,
            answer.outcome.outcome,
        )
        return answer

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            self._loop._text.setdefault(session_id, []).append(update.content.text)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None


class AcpModelLoop:
    """One agent's turns run by an ACP agent subprocess; use as an async context manager (or
    call `aclose`), which ends the process."""

    def __init__(
        self,
        command: list[str],
        mcp_server: McpServerStdio,
        *,
        allow: list[str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        self.command = list(command)
        self.mcp_server = mcp_server
        self.policy = PermissionPolicy(list(allow or []))
        self.env = dict(env or {})
        self.cwd = cwd or os.getcwd()
        self.sessions: dict[str, str] = {}  # c2a session -> ACP session id
        self._text: dict[str, list[str]] = {}
        self._stack: contextlib.AsyncExitStack | None = None
        self._conn: ClientSideConnection | None = None
        self._starting = asyncio.Lock()
        self._opening: dict[str, asyncio.Lock] = {}

    async def __aenter__(self) -> AcpModelLoop:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        stack, self._stack, self._conn = self._stack, None, None
        self.sessions.clear()
        if stack is not None:
            await stack.aclose()

    def inject(self, params: dict[str, Any]) -> bool:
        """ACP agents take new events in their next turn: never injected."""
        return False

    async def run(self, turn: Turn) -> TurnResult:
        """Prompt the agent with the turn in its conversation's session; cancelling sends
        `session/cancel`. Raises when the agent cannot be reached (the events stay pending)."""
        key = session_of(turn.events[0])
        conn = await self._connection()
        session_id, first = await self._session(conn, key)
        text = render_turn([parse_deliver(p) for p in turn.events], with_rules=first)
        self._text[session_id] = []
        try:
            response = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(conn.cancel(session_id=session_id))
            raise
        finally:
            said = "".join(self._text.pop(session_id, []))
        ids = tuple(turn.event_ids)
        if response.stop_reason in ("end_turn", "max_turn_requests"):
            return TurnResult(key, "completed", ids, text=said)
        reason = f"the agent stopped the turn: {response.stop_reason}"
        return TurnResult(key, "failed", ids, ids, reason, said)

    async def _connection(self) -> ClientSideConnection:
        async with self._starting:
            if self._conn is not None:
                return self._conn
            stack = contextlib.AsyncExitStack()
            try:
                conn, _process = await stack.enter_async_context(
                    spawn_agent_process(
                        cast(Client, _Client(self)),  # structurally a Client; see _Client
                        self.command[0],
                        *self.command[1:],
                        env=self.env or None,
                        transport_kwargs={"stderr": None},  # the agent's stderr: the host's
                    )
                )
                await conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(),
                    client_info=Implementation(name="c2a-host", version="0.1.0"),
                )
            except BaseException:
                await stack.aclose()
                raise
            self._stack, self._conn = stack, conn
            return conn

    async def _session(self, conn: ClientSideConnection, key: str) -> tuple[str, bool]:
        async with self._opening.setdefault(key, asyncio.Lock()):
            if key in self.sessions:
                return self.sessions[key], False
            response = await conn.new_session(cwd=self.cwd, mcp_servers=[self.mcp_server])
            self.sessions[key] = response.session_id
            return response.session_id, True


def mcp_server_entry(agent: str, manifest: str, store: str) -> McpServerStdio:
    """The chat tools of `agent` as a stdio MCP server entry for `session/new`."""
    return McpServerStdio(
        name=MCP_SERVER_NAME,
        command=sys.executable,
        args=[
            "-m",
            "harness_bridge.mcp_server",
            "--manifest",
            os.path.abspath(manifest),
            "--store",
            os.path.abspath(store),
            "--agent",
            agent,
        ],
        env=[],
    )


class AcpHarness(InProcessHarness):
    """The built-in harness around an ACP agent; ends the agent process when it stops."""

    loop: AcpModelLoop

    async def stop(self) -> None:
        try:
            await super().stop()
        finally:
            await self.loop.aclose()


def from_settings(agent: str, engine: Engine, settings: Mapping[str, Any]) -> AcpHarness:
    """The `c2a.backends` entry point: build the harness from a manifest's settings."""
    try:
        parsed = AcpSettings.model_validate(dict(settings))
    except ValidationError as exc:
        raise settings_error(agent, exc) from None
    loop = AcpModelLoop(
        parsed.command,
        mcp_server_entry(agent, parsed.manifest, parsed.store),
        allow=parsed.allow,
        env=parsed.env,
        cwd=parsed.cwd,
    )
    return AcpHarness(agent, engine, loop, SystemClock(), quiet_ms=parsed.quiet_ms)
