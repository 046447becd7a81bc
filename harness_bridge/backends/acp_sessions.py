"""An ACP agent's subprocess and its sessions: started on demand, restarted when it died,
each conversation's session opened, restored with `session/load`, or new.

The conversation → ACP session id map of one agent is a small JSON file in the run's data
folder (`sessions_file`), replaced atomically when a session is opened; the chat tools' MCP
server (`acp_tools`: the host's HTTP endpoint, or a stdio server process) is passed with every
`session/new` and `session/load`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import cast

from acp import PROTOCOL_VERSION, Client, RequestError, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, Implementation

from harness_bridge.backends.acp_client import AgentSide, Listener
from harness_bridge.backends.acp_tools import McpServer, ToolServers
from harness_bridge.stderr_log import StderrLog
from harness_bridge.transport import MAX_LINE

__all__ = [
    "AgentProcess",
    "read_sessions",
    "sessions_file",
    "write_sessions",
]

log = logging.getLogger(__name__)


def read_sessions(path: Path | None) -> dict[str, str]:
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


def write_sessions(path: Path | None, sessions: Mapping[str, str]) -> None:
    """Replace the file atomically, so a crash leaves the old map or the new one."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.partial")
    partial.write_text(json.dumps(sessions, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(partial, path)


def sessions_file(stem: str, agent: str) -> Path:
    """Where an agent's ACP sessions are kept: `<stem>.acp-<agent>.json`; in a run the stem is
    `<data folder>/<workspace>` (`HarnessContext.files`), as the SQLite ledger's name is."""
    return Path(f"{stem}.acp-{agent}.json")


class AgentProcess:
    """One agent's ACP subprocess, started on demand, and the sessions open in it.

    `sessions` maps a conversation to its ACP session id; with `sessions_path` it is read from
    and saved to that JSON file, so it outlives the host. What the agent calls goes to
    `listener`."""

    def __init__(
        self,
        agent: str,
        command: list[str],
        tools: ToolServers,
        listener: Listener,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        sessions_path: str | Path | None = None,
    ) -> None:
        self.agent = agent
        self.command = list(command)
        self.tools = tools
        self.env = dict(env or {})
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.sessions_path = Path(sessions_path) if sessions_path is not None else None
        self.sessions: dict[str, str] = read_sessions(self.sessions_path)
        self._listener = listener
        self._open: set[str] = set()  # conversations whose session is open in this process
        self._stack: contextlib.AsyncExitStack | None = None
        self._conn: ClientSideConnection | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._can_load = False
        self._takes_http = False  # MCP servers over HTTP (`mcpCapabilities.http`)
        self._starting = asyncio.Lock()
        self._opening: dict[str, asyncio.Lock] = {}

    async def aclose(self) -> None:
        """End the agent process; a later `connection` starts it again."""
        if self._conn is not None:
            await self.reset(self._conn)

    async def connection(self) -> ClientSideConnection:
        """The running agent's connection, starting the process (again) when there is none."""
        async with self._starting:
            if self._conn is not None and self._process is not None:
                if self._process.returncode is None:
                    return self._conn
                await self.reset(self._conn)
            stack = contextlib.AsyncExitStack()
            stderr = StderrLog(self.agent)
            stack.push_async_callback(stderr.aclose)  # unwound last: after the process ends
            try:
                conn, process = await stack.enter_async_context(
                    spawn_agent_process(
                        cast(Client, AgentSide(self._listener)),  # structurally a Client
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
            mcp = capabilities.mcp_capabilities if capabilities is not None else None
            self._takes_http = mcp is not None and bool(mcp.http)
            self._stack, self._conn, self._process = stack, conn, process
            return conn

    async def reset(self, conn: ClientSideConnection) -> None:
        """Forget a connection whose agent process died (or is to end), and end the process."""
        if self._conn is not conn:
            return  # already replaced
        stack, self._stack, self._conn, self._process = self._stack, None, None, None
        self._open.clear()
        if stack is not None:
            with contextlib.suppress(Exception):
                await stack.aclose()

    async def session(self, conn: ClientSideConnection, key: str) -> tuple[str, bool]:
        """The conversation's ACP session in this process, and whether it is new (its first
        prompt carries the rules): open already, restored with `session/load`, or new."""
        async with self._opening.setdefault(key, asyncio.Lock()):
            if key in self._open:
                return self.sessions[key], False
            servers: list[McpServer] = [await self.tools.entry(self._takes_http)]
            saved = self.sessions.get(key)
            if saved is not None and self._can_load:
                try:
                    await conn.load_session(cwd=self.cwd, session_id=saved, mcp_servers=servers)
                except RequestError as exc:
                    log.info("acp session %s of %s not restored: %s", saved, self.agent, exc)
                else:
                    self._open.add(key)
                    return saved, False
            response = await conn.new_session(cwd=self.cwd, mcp_servers=servers)
            self.sessions[key] = response.session_id
            self._open.add(key)
            write_sessions(self.sessions_path, self.sessions)
            return response.session_id, True
