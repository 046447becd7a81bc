"""One agent's chat tools offered as an MCP server, over stdio or streamable HTTP.

`build_server` wraps a `ChatTools` in the SDK's low-level `Server`: `tools/list` answers with
`ChatTools.specs()` and `tools/call` runs `ChatTools.call`, so this face holds no tool logic of
its own. A result comes back both as `structuredContent` and as its JSON text. A `ToolError` (a
refusal, bad arguments, an unknown tool) becomes a tool result with `isError` and the reason as
text, so the model can read why and correct itself; any other exception is logged here and
reported as a generic tool error. Neither is a protocol error, and neither ends the connection.

Run `python -m harness_bridge.mcp_server --manifest M --store LEDGER --agent ID` as a subprocess
for a harness that launches MCP servers over stdio, add `--http HOST:PORT` to serve streamable
HTTP instead, or embed `serving_http` in the host, where the tools share the live engine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import socket
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import anyio
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

from core.clock import SystemClock
from core.engine import Engine
from core.errors import C2AError
from core.manifest import Workspace, load_manifest
from core.sqlite_store import SQLiteStore
from harness_bridge.tools import ChatTools, ToolError

__all__ = ["build_server", "call_tool", "http_app", "main", "run_stdio", "serving_http"]

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


@contextlib.asynccontextmanager
async def serving_http(
    tools: ChatTools, *, host: str = "127.0.0.1", port: int = 0, path: str = MCP_PATH
) -> AsyncIterator[str]:
    """Serve streamable HTTP on `host:port` (port 0: the OS picks one) while the block runs, and
    yield the endpoint URL. The socket listens before the URL is yielded, so a client may
    connect at once; leaving the block stops the server gracefully and closes the socket. The
    host's signal handlers are left alone."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.create_server((host, port), family=family) as sock:
        bound = sock.getsockname()[1]
        server = _EmbeddedServer(_config(tools, host, bound, path))
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            try:
                yield f"http://{_authority(host, bound)}{path}"
            finally:
                server.should_exit = True


async def _serve_http(tools: ChatTools, host: str, port: int) -> None:
    """Serve streamable HTTP until SIGINT or SIGTERM, then stop gracefully."""
    server = uvicorn.Server(_config(tools, host, port, MCP_PATH))
    log.info("agent:%s chat tools at http://%s%s", tools.agent, _authority(host, port), MCP_PATH)
    await server.serve()


def _config(tools: ChatTools, host: str, port: int, path: str) -> uvicorn.Config:
    return uvicorn.Config(
        http_app(tools, host=host, path=path),
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


# ---- command line ----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Serve one agent's chat tools from the ledger at `--store`; returns the exit status (0 after
    a clean end, 2 for an unusable manifest, ledger or agent, 130 on interrupt).

    The process folds the ledger into its own engine at start and then reads and writes the
    shared ledger: claims and dispositions are arbitrated there, but what the host's engine
    learns later (another agent's claim, a `chat_leave`) is not seen across processes. Prefer
    `serving_http` inside the host where that matters."""
    parser = argparse.ArgumentParser(
        prog="python -m harness_bridge.mcp_server",
        description="Offer one agent's c2a chat tools as an MCP server (stdio by default).",
    )
    parser.add_argument("--manifest", "-m", required=True, help="workspace manifest (YAML)")
    parser.add_argument("--store", required=True, help="the host's ledger file (SQLite)")
    parser.add_argument("--agent", required=True, help="the agent whose tools these are")
    parser.add_argument(
        "--http",
        type=_host_port,
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    args = parser.parse_args(argv)
    # Standard output may be the MCP wire: everything said goes to standard error. The SDK's
    # own chatter stays at warnings; this module's refusals and address are worth seeing.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    log.setLevel(logging.INFO)
    try:
        asyncio.run(_main(args))
    except C2AError as exc:
        print(f"c2a mcp: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


async def _main(args: argparse.Namespace) -> None:
    workspace = Workspace.from_manifest(load_manifest(args.manifest))
    if args.agent not in workspace.manifest.agents:
        known = ", ".join(sorted(workspace.manifest.agents))
        raise C2AError(f"no agent {args.agent!r} in the manifest; its agents are {known}")
    store = SQLiteStore(args.store)
    await store.open()
    try:
        engine = Engine(workspace, store, SystemClock())
        await engine.rebuild()
        tools = ChatTools(engine, args.agent)
        if args.http:
            await _serve_http(tools, *args.http)
        else:
            await run_stdio(tools)
    finally:
        await store.close()


if __name__ == "__main__":
    sys.exit(main())
