"""Which MCP server an ACP agent is given for its chat tools, chosen once its process has said
what it takes (`initialize`).

An agent that takes MCP servers over HTTP (`mcpCapabilities.http`) is given the host's own
endpoint (`harness_bridge.mcp_server.HttpEndpoint`: loopback, with a bearer token only the
agent is given). Its tools then run on the live engine: another agent's claim, a `chat_leave`
or a mute counts at once, and a reply wakes the outbox as it commits. Any other agent is given
the stdio server process (`python -m c2a.mcp_cli`), which opens the SQLite ledger itself. A run
on PostgreSQL has no such file, so there an agent that takes only stdio cannot reach its tools:
its turns fail with what to do (`ModelError`, so the agent is down, its people are told, and a
role question goes to another).
"""

from __future__ import annotations

import os
import sys

from acp.schema import AcpMcpServer, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer

from core.errors import ModelError
from harness_bridge.mcp_server import HttpEndpoint
from harness_bridge.tools import ChatTools

__all__ = ["MCP_SERVER_NAME", "McpServer", "ToolServers", "mcp_server_entry"]

MCP_SERVER_NAME = "c2a"

McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio
"""Any MCP server entry a session may be given (this module gives the first or the last)."""


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


class ToolServers:
    """One agent's chat tools as the MCP server its ACP sessions are opened with: the host's
    HTTP endpoint, started when first given, or `stdio` (None where there is no SQLite ledger
    for it to open)."""

    def __init__(self, tools: ChatTools, stdio: McpServerStdio | None) -> None:
        self.stdio = stdio
        self.endpoint = HttpEndpoint(tools)

    async def entry(self, http: bool) -> McpServer:
        """The server for an agent that does (`http`) or does not take HTTP MCP servers;
        ModelError when it can be given neither."""
        if http:
            url = await self.endpoint.start()
            headers = [HttpHeader(name=k, value=v) for k, v in self.endpoint.headers.items()]
            return HttpMcpServer(type="http", name=MCP_SERVER_NAME, url=url, headers=headers)
        if self.stdio is None:
            raise ModelError(
                f"the ACP agent of {self.endpoint.tools.agent} takes MCP servers only over stdio, "
                "and the stdio chat tools need a SQLite ledger, which this run does not have "
                "(PostgreSQL): use an agent that takes HTTP MCP servers (mcpCapabilities.http), "
                "or run this workspace on SQLite"
            )
        return self.stdio

    async def aclose(self) -> None:
        """Stop the HTTP endpoint, if it was started."""
        await self.endpoint.aclose()
