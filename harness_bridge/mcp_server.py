"""One agent's chat tools offered as an MCP server, over stdio or streamable HTTP.

`build_server` wraps a `ChatTools` in the SDK's low-level `Server`: `tools/list` answers with
`ChatTools.specs()` and `tools/call` runs `ChatTools.call`, so this face holds no tool logic of
its own. A result comes back both as `structuredContent` and as its JSON text. A `ToolError` (a
refusal, bad arguments, an unknown tool) becomes a tool result with `isError` and the reason as
text, so the model can read why and correct itself; any other exception is logged here and
reported as a generic tool error. Neither is a protocol error, and neither ends the connection.

`python -m c2a.mcp_cli --manifest M --store LEDGER --agent ID` runs `run_stdio` as a subprocess
for a harness that launches MCP servers over stdio (`--http HOST:PORT`: `serve_http` instead);
or embed `HttpEndpoint` in the host, where the tools share the live engine's port. Over HTTP
a request is admitted only with the endpoint's token (`Authorization: Bearer <token>`, compared
in constant time): any local process can reach a loopback port, and only the agent is given
the token.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import signal
import socket
from collections.abc import Iterator
from typing import Any

import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from core.errors import ToolError
from core.redact import new_token
from harness_bridge.tools import ChatTools

__all__ = [
    "HttpEndpoint",
    "build_server",
    "call_tool",
    "http_app",
    "run_stdio",
    "serve_http",
]

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
# How long a stopping HTTP server waits for open responses (a client's SSE stream) to finish.
SHUTDOWN_GRACE_SECONDS = 5


def build_server(tools: ChatTools) -> Server[Any]:
    """A low-level MCP server offering `tools`: the same names, descriptions and input schemas
    as `ChatTools.specs()`, each call answered by `call_tool`."""

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(
            tools=[
                Tool(
                    name=spec["name"],
                    description=spec["description"],
                    input_schema=spec["inputSchema"],
                )
                for spec in tools.specs()
            ]
        )

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        return await call_tool(tools, params.name, params.arguments)

    return Server(
        "c2a",
        instructions=f"Chat tools of agent:{tools.agent}: read what was delivered to you, "
        "and answer, claim, defer, resolve or leave.",
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


async def call_tool(
    tools: ChatTools, name: str, arguments: dict[str, Any] | None
) -> CallToolResult:
    """Run one tool and shape its outcome as an MCP tool result; never raises (but for
    cancellation): a refusal or any failure is a result with `is_error` set."""
    try:
        result = await tools.call(name, arguments)
        text = json.dumps(result, ensure_ascii=False)
    except ToolError as exc:
        log.info("agent:%s %s: %s", tools.agent, name, exc)
        return _error(str(exc))
    except Exception:
        log.exception("agent:%s %s failed", tools.agent, name)
        return _error(f"{name} failed inside the c2a host; the host's log has the details")
    return CallToolResult(content=[TextContent(text=text)], structured_content=result)


def _error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=message)], is_error=True)


# ---- transports ------------------------------------------------------------------------------


async def run_stdio(tools: ChatTools) -> None:
    """Serve MCP over this process's stdin and stdout until stdin closes."""
    server = build_server(tools)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def http_app(tools: ChatTools, *, host: str = "127.0.0.1", path: str = MCP_PATH) -> Starlette:
    """The streamable-HTTP ASGI app at `path`; its lifespan runs the session manager, so run it
    under a server that runs lifespans. For a loopback `host` the SDK only admits requests
    whose Host and Origin headers are loopback too (no DNS rebinding)."""
    return build_server(tools).streamable_http_app(streamable_http_path=path, host=host)


class HttpEndpoint:
    """`tools` served over streamable HTTP on `host:port` (port 0: the OS picks one) of this
    process, from `start` to `aclose`; both may be called from any task, and again. `token`
    (made here unless given, of the shape redaction finds: `core.redact.new_token`) is what a
    client must send (`headers`)."""

    def __init__(
        self,
        tools: ChatTools,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        path: str = MCP_PATH,
        token: str | None = None,
    ) -> None:
        self.tools = tools
        self.host = host
        self.port = port
        self.path = path
        self.token = token or new_token()
        self.url: str | None = None
        self._server: _EmbeddedServer | None = None
        self._serving: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()

    @property
    def headers(self) -> dict[str, str]:
        """What a client sends with every request to be admitted."""
        return {"Authorization": f"Bearer {self.token}"}

    async def start(self) -> str:
        """The endpoint's URL, listening once this returns (a client may connect at once)."""
        async with self._starting:
            if self.url is None:
                family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
                sock = socket.create_server((self.host, self.port), family=family)
                port = sock.getsockname()[1]
                config = _config(self.tools, self.host, port, self.path, self.token)
                self._server = _EmbeddedServer(config)
                self._serving = asyncio.create_task(_serve(self._server, sock))
                self._serving.add_done_callback(self._ended)
                self.url = f"http://{_authority(self.host, port)}{self.path}"
            return self.url

    def _ended(self, serving: asyncio.Task[None]) -> None:
        """The server stopped on its own (not by `aclose`): said, and the next `start` serves
        again (a new session gets the new URL)."""
        if serving is not self._serving:
            return
        self._server, self._serving, self.url = None, None, None
        failure = None if serving.cancelled() else serving.exception()
        log.error(
            "agent:%s chat tools endpoint stopped: %s",
            self.tools.agent,
            failure or "its server ended",
            exc_info=failure,
        )

    async def aclose(self) -> None:
        """Stop serving (gracefully: open responses get `SHUTDOWN_GRACE_SECONDS`) and free the
        port; a later `start` serves again, with the same token."""
        server, serving = self._server, self._serving
        self._server, self._serving, self.url = None, None, None
        if server is not None and serving is not None:
            server.should_exit = True
            await asyncio.gather(serving, return_exceptions=True)


async def _serve(server: _EmbeddedServer, sock: socket.socket) -> None:
    with sock:
        await server.serve([sock])


async def serve_http(endpoint: HttpEndpoint) -> None:
    """Serve `endpoint` until SIGINT or SIGTERM, then stop gracefully. Its URL and the header to
    send go to standard output once it listens."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    url = await endpoint.start()
    agent = endpoint.tools.agent
    print(f"c2a mcp: chat tools of {agent} at {url}", flush=True)
    print(f"c2a mcp: send the header `Authorization: Bearer {endpoint.token}`", flush=True)
    try:
        await stop.wait()
    finally:
        await endpoint.aclose()


def _config(tools: ChatTools, host: str, port: int, path: str, token: str) -> uvicorn.Config:
    return uvicorn.Config(
        _Bearer(http_app(tools, host=host, path=path), token),
        host=host,
        port=port,
        lifespan="on",
        ws="none",
        log_config=None,  # the embedding process owns logging
        access_log=False,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
    )


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _EmbeddedServer(uvicorn.Server):
    """uvicorn without its signal capture: inside the host, SIGINT stays the host's to handle."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _Bearer:
    """ASGI: an HTTP request is passed on only with `Authorization: Bearer <token>`, else it is
    answered 401 and goes no further; lifespan events pass through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._admits(scope):
            refused = PlainTextResponse(
                "a bearer token is required",
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _admits(self, scope: Scope) -> bool:
        given = [value for name, value in scope["headers"] if name == b"authorization"]
        return len(given) == 1 and secrets.compare_digest(given[0], self._expected)
