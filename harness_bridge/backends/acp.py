"""The `acp` backend: an Agent Client Protocol agent (Claude Code, Codex or Gemini CLI through
their ACP adapters, opencode, ...) as the model loop of a built-in harness.

The agent runs as a subprocess from the `command` in the settings and is spoken to over its
stdio with the ACP SDK (PyPI `agent-client-protocol`); each line it writes to stderr becomes a
log record (`harness_bridge.stderr_log`).

- Sessions. A session is one agent in one conversation (`session_of`), the same choice as the
  `openai` backend: the agent keeps a conversation's context, what was said in a DM never
  reaches a channel's session, and conversations run side by side on one agent process.
  `session/new` passes the agent's chat tools as an MCP server (`acp_tools`): the host's own
  HTTP endpoint when the agent takes one, else a stdio server process over the SQLite ledger;
  the first prompt of a session carries the standing response rules, then the rendered turn.
- Restarts. The conversation → ACP session id map is kept in a small JSON file next to the
  ledger (`<data folder>/<workspace>.acp-<agent>.json`), rewritten atomically when a session
  is opened.
  When the agent process dies mid-turn it is started again (at most `RESTARTS_PER_TURN` times
  a turn) and the turn's events still unsettled in the ledger are prompted again. After any
  restart, of the agent or of the host, a saved session is restored with `session/load` when
  the agent advertises `loadSession`; otherwise (or when loading fails) a new session is opened
  and its first prompt carries the rules again.
- Progress. `session/update` notifications during a prompt (message and thought chunks, tool
  calls, plans) become progress on the platform through the working indicator: a platform that
  shows words says what the agent is doing ("reading", "step 2 of 5"), one that shows only
  typing keeps it up; at most one every `progress_every_s` seconds a turn. The agent's text is
  never posted: only the chat tools speak.
- Changes mid-turn. A `notifications/cancelled` (edit, delete, claim by another agent, ...) of
  an event in the running turn takes it out of the turn and sends `session/cancel`; an edit's
  new version joins the turn (`inject`), and so does an urgent event of the same conversation
  (`harness_bridge.turns.preempts`), which also sends `session/cancel`, so that the agent
  hears of it now rather than after a long turn. When the agent has stopped, the turn is
  prompted again with what is left: the remaining events still unsettled, the edited text
  and the urgent event. Other events arriving mid-turn wait for the next turn. Cancelling the
  task running a turn sends `session/cancel` too.
- Permissions. The agent's `allow` list of tool names (matched against the title of the tool
  call the agent asks about) is the first filter: an allowed tool is allowed once. Anything
  else asked during a turn is asked of the agent's approvers in the conversation of the turn's
  last event (`acp_approval`); their choice goes back to the agent, and silence, or having no
  approvers, is a refusal (deny by default; no wildcard and never "allow always"). A question
  still open when the turn is interrupted is answered `cancelled`, as ACP asks of a client.
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    McpServerStdio,
    PermissionOption,
    PromptResponse,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallUpdate,
)

from core.agent_port import AgentPort
from harness_bridge.backends.acp_approval import ask_in_chat, selected
from harness_bridge.backends.acp_client import PermissionPolicy, cancel, progress_note
from harness_bridge.backends.acp_sessions import AgentProcess, sessions_file
from harness_bridge.backends.acp_settings import AcpSettings, ledger_of
from harness_bridge.backends.acp_tools import ToolServers, mcp_server_entry
from harness_bridge.backends.environment import passed_environment
from harness_bridge.backends.openai import TurnResult, session_of
from harness_bridge.backends.registry import HarnessContext, validate
from harness_bridge.prompt import render_turn
from harness_bridge.runtime import InProcessHarness
from harness_bridge.tools import ChatTools
from harness_bridge.turns import Turn, preempts
from harness_bridge.wire import parse_deliver
from harness_bridge.working import progress

__all__ = ["AcpHarness", "AcpModelLoop", "from_settings"]

log = logging.getLogger(__name__)

RESTARTS_PER_TURN = 2


@dataclass(slots=True)
class _Running:
    """A turn being run: the events of its next (or current) prompt, edits waiting to join it,
    and the prompt in flight."""

    key: str
    events: list[dict[str, Any]]
    seen: set[str]
    extra: list[dict[str, Any]] = field(default_factory=list)
    prompting: tuple[ClientSideConnection, str] | None = None
    interrupted: bool = False
    said: list[str] = field(default_factory=list)
    nonce: str = field(default_factory=lambda: secrets.token_hex(4))
    steps: int = 0
    progress_at: float = -math.inf
    asking: set[asyncio.Task[RequestPermissionResponse]] = field(default_factory=set)

    def remove(self, event_id: str) -> bool:
        """Take an event out of the turn; False when it is not in it."""
        before = len(self.events) + len(self.extra)
        self.events = [e for e in self.events if e["eventId"] != event_id]
        self.extra = [e for e in self.extra if e["eventId"] != event_id]
        return len(self.events) + len(self.extra) != before


class AcpModelLoop:
    """One agent's turns run by an ACP agent subprocess; use as an async context manager (or
    call `aclose`), which ends the process.

    `sessions` maps a conversation (`session_of`) to its ACP session id; with `sessions_path`
    it is read from and saved to that JSON file, so it outlives the host."""

    def __init__(
        self,
        port: AgentPort,
        command: list[str],
        stdio_tools: McpServerStdio | None,
        *,
        allow: list[str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        sessions_path: str | Path | None = None,
        progress_every_s: float = 10.0,
        turn_timeout_s: float | None = None,
    ) -> None:
        self.agent = port.agent
        self.turn_timeout_s = turn_timeout_s
        self.port = port
        self.policy = PermissionPolicy(list(allow or []))
        self.progress_every_s = progress_every_s
        self._running: dict[str, _Running] = {}
        self.tools = ToolServers(ChatTools(port), stdio_tools)
        self.process = AgentProcess(
            self.agent, command, self.tools, self, env=env, cwd=cwd, sessions_path=sessions_path
        )
        self._background: set[asyncio.Task[None]] = set()

    @property
    def sessions(self) -> dict[str, str]:
        """Conversation (`session_of`) → its ACP session id."""
        return self.process.sessions

    @property
    def sessions_path(self) -> Path | None:
        """The JSON file the sessions are kept in, if any."""
        return self.process.sessions_path

    async def __aenter__(self) -> AcpModelLoop:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """End the agent process and stop serving its tools; a later turn starts both again."""
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        try:
            await self.process.aclose()
        finally:
            await self.tools.aclose()

    # ---- from the harness --------------------------------------------------------------------

    def inject(self, params: dict[str, Any]) -> bool:
        """An edit of an event of the running turn in its conversation joins that turn in its
        place, an urgent event joins it beside the others, and either way the prompt in flight
        is cancelled so the agent sees it now. Any other event waits for the next turn (False)."""
        running = self._running.get(session_of(params))
        if running is None:
            return False
        superseded = params.get("supersedes")
        replaced = superseded if superseded in running.seen else None
        if replaced is None and not preempts(params):
            return False
        if params["eventId"] not in running.seen:
            running.seen.add(params["eventId"])
            running.extra.append(params)
        if replaced is not None:
            running.remove(replaced)
        self._interrupt(running)
        return True

    def drop(self, event_id: str) -> None:
        """`notifications/cancelled`: take the event out of a running turn that holds it and
        cancel the prompt in flight; the turn is prompted again with what is left."""
        for running in self._running.values():
            if running.remove(event_id):
                self._interrupt(running)

    async def run(self, turn: Turn) -> TurnResult:
        """Prompt the agent with the turn in its conversation's session; after an edit or a
        delete mid-turn, or the agent process dying, prompt again with what is left. Cancelling
        sends `session/cancel`. Raises when the agent cannot be reached (the events stay
        pending), and RuntimeError when a turn is already running in the session."""
        key = session_of(turn.events[0])
        if key in self._running:
            raise RuntimeError(f"a turn is already running in session {key}")
        running = _Running(key, list(turn.events), set(turn.event_ids))
        self._running[key] = running
        deadline = asyncio.timeout(self.turn_timeout_s)
        try:
            async with deadline:  # on expiry the prompt is cancelled, which tells the agent
                return await self._turn(running)
        except TimeoutError:
            if not deadline.expired():
                raise
            ids = tuple(e["eventId"] for e in running.events)
            reason = f"the agent did not end its turn within {self.turn_timeout_s:g} s"
            return TurnResult(key, "failed", ids, ids, reason, "".join(running.said))
        finally:
            del self._running[key]

    async def _turn(self, running: _Running) -> TurnResult:
        restarts = 0
        while True:
            running.events = await self._unsettled(running.events)
            try:
                response = await self._prompt(running)
            except ConnectionError as exc:
                restarts += 1
                if restarts > RESTARTS_PER_TURN:
                    raise
                log.warning(
                    "acp agent of %s stopped mid-turn (%s); starting it again", self.agent, exc
                )
                continue
            ids = tuple(e["eventId"] for e in running.events)
            if response is None:  # every event was deleted, replaced or answered
                return TurnResult(running.key, "completed", ids)
            if response.stop_reason == "cancelled" and running.interrupted:
                continue  # an event changed mid-turn: prompt again with what is left
            if running.extra:  # an edit that arrived as the agent finished
                running.events = []
                continue
            said = "".join(running.said)
            if response.stop_reason in ("end_turn", "max_turn_requests"):
                return TurnResult(running.key, "completed", ids, text=said)
            reason = f"the agent stopped the turn: {response.stop_reason}"
            return TurnResult(running.key, "failed", ids, ids, reason, said)

    async def _prompt(self, running: _Running) -> PromptResponse | None:
        """One `session/prompt` with the turn's events and edits; None when none are left.
        Raises ConnectionError when the agent process is gone (it is started again next)."""
        conn = await self.process.connection()
        try:
            session_id, first = await self.process.session(conn, running.key)
            running.events += running.extra
            running.extra, running.interrupted, running.said = [], False, []
            if not running.events:
                return None
            text = render_turn([parse_deliver(p) for p in running.events], with_rules=first)
            running.prompting = conn, session_id
            try:
                return await conn.prompt(session_id=session_id, prompt=[text_block(text)])
            except asyncio.CancelledError:
                await cancel(conn, session_id)
                raise
            finally:
                running.prompting = None
        except ConnectionError:
            await self.process.reset(conn)
            raise

    def _interrupt(self, running: _Running) -> None:
        if running.interrupted:
            return
        running.interrupted = True
        for asking in running.asking:  # ACP: pending permissions are answered `cancelled`
            asking.cancel()
        if running.prompting is not None:
            task = asyncio.create_task(cancel(*running.prompting))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _unsettled(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The events this agent has not settled in the ledger (answered, deferred...)."""
        unsettled = set(await self.port.unsettled([params["eventId"] for params in events]))
        return [params for params in events if params["eventId"] in unsettled]

    # ---- from the agent ----------------------------------------------------------------------

    async def permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        """Allowed by the `allow` list, or else asked of people in chat during a turn; refused
        outside one."""
        running = self._prompting(session_id)
        if self.policy.allows(tool_call) or running is None or not running.events:
            return self.policy.answer(tool_call, options)
        event_id = running.events[-1]["eventId"]
        asking = asyncio.create_task(ask_in_chat(self.port, event_id, tool_call, options))
        running.asking.add(asking)
        try:
            return await asking
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # this request itself is cancelled, not the question
            return selected(None, [])  # the turn was interrupted: `cancelled`
        finally:
            running.asking.discard(asking)

    def _prompting(self, session_id: str) -> _Running | None:
        """The turn whose prompt is in flight in ACP session `session_id`, if any."""
        return next(
            (
                r
                for r in self._running.values()
                if r.prompting is not None and r.prompting[1] == session_id
            ),
            None,
        )

    async def updated(self, session_id: str, update: Any) -> None:
        """A `session/update`: the agent's text is kept for the turn's result, and what it is
        doing becomes progress on the platform. Updates outside a prompt (a loaded session's
        history) are ignored."""
        running = self._prompting(session_id)
        if running is None:
            return
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            running.said.append(update.content.text)
        note = progress_note(update)
        now = time.monotonic()
        if note is None or now - running.progress_at < self.progress_every_s:
            return
        running.progress_at = now
        running.steps += 1
        step = f"{running.nonce}:{running.steps}"
        await progress(self.port, running.events, note, step)


class AcpHarness(InProcessHarness):
    """The built-in harness around an ACP agent: cancellations reach the running turn too, and
    stopping ends the agent process."""

    loop: AcpModelLoop

    def _drop(self, event_id: str, reason: str) -> None:
        """The loop takes the event out of the running turn's prompt itself (`drop`)."""
        self.loop.drop(event_id)

    async def stop(self) -> None:
        try:
            await super().stop()
        finally:
            await self.loop.aclose()


def from_settings(context: HarnessContext, settings: Mapping[str, Any]) -> AcpHarness:
    """The `c2a.backends` entry point: build the harness from a manifest's settings."""
    agent, port = context.agent, context.port
    parsed = validate(AcpSettings, agent, settings)
    ledger = ledger_of(context, parsed.manifest, parsed.store)
    stem = context.files or (str(Path(ledger[1]).with_suffix("")) if ledger else None)
    loop = AcpModelLoop(
        port,
        parsed.command,
        mcp_server_entry(agent, *ledger) if ledger else None,
        allow=parsed.allow,
        env=passed_environment(agent, context.host_environ, parsed.pass_env, parsed.env),
        cwd=parsed.cwd,
        sessions_path=sessions_file(stem, agent) if stem else None,
        progress_every_s=parsed.progress_every_s,
        turn_timeout_s=parsed.turn_timeout_s,
    )
    return AcpHarness(port, context.deliveries, loop, port.clock, quiet_ms=parsed.quiet_ms)
