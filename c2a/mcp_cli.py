"""`python -m c2a.mcp_cli`: one agent's chat tools as an MCP server process over the ledger.

The composition of that process: it reads the manifest, opens the host's ledger, builds an
engine on the system clock and serves `harness_bridge.mcp_server` over stdio (or streamable
HTTP with `--http HOST:PORT`). The ACP backend launches it for an agent's harness that takes
MCP servers only over stdio.

Over HTTP a request is answered only with `Authorization: Bearer <token>`: the token is
`$C2A_MCP_TOKEN` when set (32 characters at least), else one made at start; the URL and the
header to send are printed once the port listens. Whoever has the token can act as the agent.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence

from c2a.platforms import load_workspace
from core.clock import SystemClock
from core.engine import Engine
from core.engine_port import EnginePort
from core.errors import C2AError
from core.sqlite_store import SQLiteStore
from harness_bridge import mcp_server
from harness_bridge.tools import ChatTools

__all__ = ["MIN_TOKEN", "TOKEN_VARIABLE", "main"]

TOKEN_VARIABLE = "C2A_MCP_TOKEN"
MIN_TOKEN = 32


def main(argv: Sequence[str] | None = None) -> int:
    """Serve one agent's chat tools from the ledger at `--store`; returns the exit status (0 after
    a clean end, 2 for an unusable manifest, ledger or agent, 130 on interrupt).

    The process folds the ledger into its own engine at start and then reads and writes the
    shared ledger: claims and dispositions are arbitrated there, but what the host's engine
    learns later (another agent's claim, a `chat_leave`) is not seen across processes. Prefer
    the host's own endpoint (`mcp_server.HttpEndpoint`) where that matters."""
    parser = argparse.ArgumentParser(
        prog="python -m c2a.mcp_cli",
        description="Offer one agent's c2a chat tools as an MCP server (stdio by default).",
    )
    parser.add_argument("--manifest", "-m", required=True, help="workspace manifest (YAML)")
    parser.add_argument("--store", required=True, help="the host's ledger file (SQLite)")
    parser.add_argument("--agent", required=True, help="the agent whose tools these are")
    parser.add_argument(
        "--http",
        type=_host_port,
        metavar="HOST:PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (port 0: any), "
        f"admitting only the bearer token in ${TOKEN_VARIABLE} or one made and printed",
    )
    args = parser.parse_args(argv)
    # Standard output may be the MCP wire: everything said goes to standard error. The SDK's
    # own chatter stays at warnings; the server's refusals and address are worth seeing.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    logging.getLogger(mcp_server.__name__).setLevel(logging.INFO)
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
    workspace = load_workspace(args.manifest)
    if args.agent not in workspace.manifest.agents:
        known = ", ".join(sorted(workspace.manifest.agents))
        raise C2AError(f"no agent {args.agent!r} in the manifest; its agents are {known}")
    store = SQLiteStore(args.store)
    await store.open()
    try:
        engine = Engine(workspace, store, SystemClock())
        await engine.rebuild()
        tools = ChatTools(EnginePort(engine, args.agent))
        if args.http:
            host, port = args.http
            token = os.environ.get(TOKEN_VARIABLE) or None
            if token is not None and len(token) < MIN_TOKEN:
                raise C2AError(f"{TOKEN_VARIABLE} is shorter than {MIN_TOKEN} characters")
            endpoint = mcp_server.HttpEndpoint(tools, host=host, port=port, token=token)
            await mcp_server.serve_http(endpoint)
        else:
            await mcp_server.run_stdio(tools)
    finally:
        await store.close()


if __name__ == "__main__":
    sys.exit(main())
