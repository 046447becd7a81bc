"""A minimal C2A harness over stdio for tests: answers `initialize`, acknowledges nothing else.

Usage: python stdio_harness.py [VERSION ...] (the versions it speaks; default: all).
"""

from __future__ import annotations

import asyncio
import sys

from harness_bridge.jsonrpc import PROTOCOL_VERSIONS, Capabilities, ClientInfo
from harness_bridge.rpc import Connection
from harness_bridge.session import accept_initialize
from harness_bridge.transport import stdio_transport


async def main(versions: list[str]) -> None:
    connection = Connection(await stdio_transport(), name="host")
    accept_initialize(
        connection,
        ClientInfo(name="test-harness", version="0.0.1"),
        Capabilities.model_validate({"delivery": {"ack": True}, "injection": {"buffered": True}}),
        versions=versions,
    )

    async def echo(params: dict[str, object] | None) -> object:
        return params

    connection.on_request("test/echo", echo)
    connection.start()
    await connection.closed.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:] or list(PROTOCOL_VERSIONS)))
