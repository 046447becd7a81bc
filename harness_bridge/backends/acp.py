"""The `acp` backend: an Agent Client Protocol agent (Claude Code, Codex or Gemini CLI through
their ACP adapters, opencode, ...) as the model loop of a built-in harness.

The agent runs as a subprocess from the `command` in the settings and is spoken to over its
stdio with the ACP SDK (PyPI `agent-client-protocol`); each line it writes to stderr becomes a
log record (`harness_bridge.stderr_log`).

- Sessions. A session is one agent in one conversation (`session_of`), the same choice as the
  `openai` backend: the agent keeps a conversation's context, what was said in a DM never
  reaches a channel's session, and conversations run side by side on one agent process.
  `session/new` passes the agent's chat tools as a stdio MCP server
  (`python -m c2a.mcp_cli`, reading and writing the host's ledger); the first
  prompt of a session carries the standing response rules, then the rendered turn.
- Restarts. The conversation → ACP session id map is kept in a small JSON file next to the
  ledger (`<ledger stem>.acp-<agent>.json`), rewritten atomically when a session is opened.
  When the agent process dies mid-turn it is started again (at most `RESTARTS_PER_TURN` times
  a turn) and the turn's events still unsettled in the ledger are prompted again. After any
  restart, of the agent or of the host, a saved session is restored with `session/load` when
  the agent advertises `loadSession`; otherwise (or when loading fails) a new session is opened
  and its first prompt carries the rules again.
- Progress. `session/update` notifications during a prompt (message and thought chunks, tool
  calls, plans) become progress on the platform through the working indicator: Slack's thread
  status says what the agent is doing ("reading", "step 2 of 5"), Discord's typing is kept up;
  at most one every `progress_every_s` seconds a turn. The agent's text is never posted: only
  the chat tools speak.
- Changes mid-turn. A `notifications/cancelled` (edit, delete, claim by another agent, ...) of
  an event in the running turn takes it out of the turn and sends `session/cancel`; an edit's
  new version joins the turn (`inject`). When the agent has stopped, the turn is prompted again
  with what is left: the remaining events still unsettled, and the edited text. Other events
  arriving mid-turn wait for the next turn. Cancelling the task running a turn sends
  `session/cancel` too.
- Permissions. Requests are answered from the agent's `allow` list of tool names (matched
  against the title of the tool call the agent asks about): an allowed tool is allowed once,
  anything else is rejected (deny by default; there is no wildcard and never "allow always").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import secrets
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from acp import PROTOCOL_VERSION, Client, RequestError, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    Implementation,
    McpServerStdio,
    PermissionOption,
    PromptResponse,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
)
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from core.engine import Engine
from harness_bridge.backends.openai import TurnResult, session_of
from harness_bridge.backends.registry import settings_error
from harness_bridge.prompt import render_turn
from harness_bridge.runtime import InProcessHarness
from harness_bridge.stderr_log import StderrLog
from harness_bridge.transport import MAX_LINE
from harness_bridge.turns import Turn
from harness_bridge.wire import parse_deliver
from harness_bridge.working import progress

__all__ = [
    "AcpHarness",
    "AcpModelLoop",
    "AcpSettings",
    "PermissionPolicy",
    "from_settings",
    "mcp_server_entry",
    "sessions_file",
]

log = logging.getLogger(__name__)

MCP_SERVER_NAME = "c2a"
RESTARTS_PER_TURN = 2
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
    progress_every_s: float = Field(default=10.0, ge=0)

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

    def remove(self, event_id: str) -> bool:
        """Take an event out of the turn; False when it is not in it."""
        before = len(self.events) + len(self.extra)
        self.events = [e for e in self.events if e["eventId"] != event_id]
        self.extra = [e for e in self.extra if e["eventId"] != event_id]
        return len(self.events) + len(self.extra) != before


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
        await self._loop.updated(session_id, update)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None


class AcpModelLoop:
    """One agent's turns run by an ACP agent subprocess; use as an async context manager (or
    call `aclose`), which ends the process.

    `sessions` maps a conversation (`session_of`) to its ACP session id; with `sessions_path`
    it is read from and saved to that JSON file, so it outlives the host."""

    def __init__(
        self,
        agent: str,
        engine: Engine,
        command: list[str],
        mcp_server: McpServerStdio,
        *,
        allow: list[str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        sessions_path: str | Path | None = None,
        progress_every_s: float = 10.0,
    ) -> None:
        self.agent = agent
        self.engine = engine
        self.command = list(command)
        self.mcp_server = mcp_server
        self.policy = PermissionPolicy(list(allow or []))
        self.env = dict(env or {})
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.sessions_path = Path(sessions_path) if sessions_path is not None else None
        self.progress_every_s = progress_every_s
        self.sessions: dict[str, str] = _read_sessions(self.sessions_path)
        self._open: set[str] = set()  # conversations whose session is open in this process
        self._running: dict[str, _Running] = {}
        self._stack: contextlib.AsyncExitStack | None = None
        self._conn: ClientSideConnection | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._can_load = False
        self._starting = asyncio.Lock()
        self._opening: dict[str, asyncio.Lock] = {}
        self._background: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> AcpModelLoop:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """End the agent process; a later turn starts it again."""
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self._conn is not None:
            await self._reset(self._conn)

    # ---- from the harness --------------------------------------------------------------------

    def inject(self, params: dict[str, Any]) -> bool:
        """An edit of an event of the running turn in its conversation joins that turn in its
        place, and the prompt in flight is cancelled so the agent sees the edited text. Any
        other event waits for the next turn (False)."""
        running = self._running.get(session_of(params))
        superseded = params.get("supersedes")
        if running is None or superseded not in running.seen:
            return False
        if params["eventId"] not in running.seen:
            running.seen.add(params["eventId"])
            running.extra.append(params)
        running.remove(superseded)
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
        try:
            return await self._turn(running)
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
        conn = await self._connection()
        try:
            session_id, first = await self._session(conn, running.key)
            running.events += running.extra
            running.extra, running.interrupted, running.said = [], False, []
            if not running.events:
                return None
            text = render_turn([parse_deliver(p) for p in running.events], with_rules=first)
            running.prompting = conn, session_id
            try:
                return await conn.prompt(session_id=session_id, prompt=[text_block(text)])
            except asyncio.CancelledError:
                await _cancel(conn, session_id)
                raise
            finally:
                running.prompting = None
        except ConnectionError:
            await self._reset(conn)
            raise

    def _interrupt(self, running: _Running) -> None:
        if running.interrupted:
            return
        running.interrupted = True
        if running.prompting is not None:
            task = asyncio.create_task(_cancel(*running.prompting))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _unsettled(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The events this agent has not settled in the ledger (answered, deferred...)."""
        kept = []
        for params in events:
            deliveries = await self.engine.store.deliveries(params["eventId"])
            if not any(
                d.decision.agent == self.agent and d.disposition is not None for d in deliveries
            ):
                kept.append(params)
        return kept

    # ---- from the agent ----------------------------------------------------------------------

    async def updated(self, session_id: str, update: Any) -> None:
        """A `session/update`: the agent's text is kept for the turn's result, and what it is
        doing becomes progress on the platform. Updates outside a prompt (a loaded session's
        history) are ignored."""
        running = next(
            (
                r
                for r in self._running.values()
                if r.prompting is not None and r.prompting[1] == session_id
            ),
            None,
        )
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
        await progress(self.engine, self.agent, tuple(running.events), note, step)

    # ---- the agent process and its sessions --------------------------------------------------

    async def _connection(self) -> ClientSideConnection:
        async with self._starting:
            if self._conn is not None and self._process is not None:
                if self._process.returncode is None:
                    return self._conn
                await self._reset(self._conn)
            stack = contextlib.AsyncExitStack()
            stderr = StderrLog(self.agent)
            stack.push_async_callback(stderr.aclose)  # unwound last: after the process ends
            try:
                conn, process = await stack.enter_async_context(
                    spawn_agent_process(
                        cast(Client, _Client(self)),  # structurally a Client; see _Client
                        self.command[0],
                        *self.command[1:],
                        env=self.env or None,
                        cwd=self.cwd,
                        transport_kwargs={"stderr": asyncio.subprocess.PIPE, "limit": MAX_LINE},
                    )
                )
                if process.stderr is not None:
                    stderr.follow(process.stderr)
                init = await conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(),
                    client_info=Implementation(name="c2a-host", version="0.1.0"),
                )
            except BaseException:
                await stack.aclose()
                raise
            capabilities = init.agent_capabilities
            self._can_load = capabilities is not None and bool(capabilities.load_session)
            self._stack, self._conn, self._process = stack, conn, process
            return conn

    async def _reset(self, conn: ClientSideConnection) -> None:
        """Forget a connection whose agent process died (or is to end), and end the process."""
        if self._conn is not conn:
            return  # already replaced
        stack, self._stack, self._conn, self._process = self._stack, None, None, None
        self._open.clear()
        if stack is not None:
            with contextlib.suppress(Exception):
                await stack.aclose()

    async def _session(self, conn: ClientSideConnection, key: str) -> tuple[str, bool]:
        """The conversation's ACP session in this process, and whether it is new (its first
        prompt carries the rules): open already, restored with `session/load`, or new."""
        async with self._opening.setdefault(key, asyncio.Lock()):
            if key in self._open:
                return self.sessions[key], False
            saved = self.sessions.get(key)
            if saved is not None and self._can_load:
                try:
                    await conn.load_session(
                        cwd=self.cwd, session_id=saved, mcp_servers=[self.mcp_server]
                    )
                except RequestError as exc:
                    log.info("acp session %s of %s not restored: %s", saved, self.agent, exc)
                else:
                    self._open.add(key)
                    return saved, False
            response = await conn.new_session(cwd=self.cwd, mcp_servers=[self.mcp_server])
            self.sessions[key] = response.session_id
            self._open.add(key)
            _write_sessions(self.sessions_path, self.sessions)
            return response.session_id, True


async def _cancel(conn: ClientSideConnection, session_id: str) -> None:
    """`session/cancel`, best effort: the agent may be gone."""
    with contextlib.suppress(Exception):
        await asyncio.shield(
            asyncio.wait_for(conn.cancel(session_id=session_id), CANCEL_SEND_TIMEOUT_S)
        )


def _read_sessions(path: Path | None) -> dict[str, str]:
    if path is None or not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("acp sessions in %s not read (%s); new sessions will be opened", path, exc)
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items()}


def _write_sessions(path: Path | None, sessions: Mapping[str, str]) -> None:
    """Replace the file atomically, so a crash leaves the old map or the new one."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.partial")
    partial.write_text(json.dumps(sessions, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(partial, path)


def sessions_file(store: str, agent: str) -> Path:
    """Where an agent's ACP sessions are kept: next to the ledger, `<stem>.acp-<agent>.json`."""
    ledger = Path(store)
    return ledger.with_name(f"{ledger.stem}.acp-{agent}.json")


def mcp_server_entry(agent: str, manifest: str, store: str) -> McpServerStdio:
    """The chat tools of `agent` as a stdio MCP server entry for `session/new`."""
    return McpServerStdio(
        name=MCP_SERVER_NAME,
        command=sys.executable,
        args=[
            "-m",
            "c2a.mcp_cli",
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
    """The built-in harness around an ACP agent: cancellations reach the running turn too, and
    stopping ends the agent process."""

    loop: AcpModelLoop

    async def _cancelled(self, params: dict[str, Any] | None) -> None:
        await super()._cancelled(params)
        if params and isinstance(params.get("eventId"), str):
            self.loop.drop(params["eventId"])

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
        agent,
        engine,
        parsed.command,
        mcp_server_entry(agent, parsed.manifest, parsed.store),
        allow=parsed.allow,
        env=parsed.env,
        cwd=parsed.cwd,
        sessions_path=sessions_file(parsed.store, agent),
        progress_every_s=parsed.progress_every_s,
    )
    return AcpHarness(agent, engine, loop, engine.clock, quiet_ms=parsed.quiet_ms)
