"""The chat tools over the C2A link itself: a harness on the JSON-RPC link (the `stdio`
backend, any external process) calls them with MCP-shaped `tools/list` and `tools/call`."""

from __future__ import annotations

from typing import Any

import orjson

from core.errors import ToolError
from harness_bridge.rpc import INVALID_PARAMS, Connection, RpcError
from harness_bridge.tools import ChatTools

__all__ = ["serve_tools", "tool_result"]


def tool_result(result: dict[str, Any] | None = None, error: str | None = None) -> dict[str, Any]:
    """An MCP-shaped tool result: the JSON as text and structured content, or the refusal."""
    if error is not None:
        return {"content": [{"type": "text", "text": error}], "isError": True}
    text = orjson.dumps(result).decode()
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": result,
        "isError": False,
    }


def serve_tools(connection: Connection, tools: ChatTools) -> None:
    """Answer `tools/list` and `tools/call` on this connection with one agent's chat tools;
    a refused or malformed call is a tool result with `isError`, never a protocol error."""

    async def list_tools(params: dict[str, Any] | None) -> dict[str, Any]:
        return {"tools": tools.specs()}

    async def call_tool(params: dict[str, Any] | None) -> dict[str, Any]:
        name = (params or {}).get("name")
        arguments = (params or {}).get("arguments")
        if not isinstance(name, str) or not (arguments is None or isinstance(arguments, dict)):
            raise RpcError(INVALID_PARAMS, "tools/call needs a name and an arguments object")
        try:
            return tool_result(await tools.call(name, arguments))
        except ToolError as exc:
            return tool_result(error=str(exc))

    connection.on_request("tools/list", list_tools)
    connection.on_request("tools/call", call_tool)
