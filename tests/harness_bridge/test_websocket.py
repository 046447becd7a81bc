"""The C2A link over a websocket on 127.0.0.1: a harness on another machine works the same."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web

from harness_bridge.jsonrpc import COMPACT_VIEW, Capabilities, ClientInfo
from harness_bridge.rpc import Connection, RpcError
from harness_bridge.session import accept_initialize, initialize
from harness_bridge.transport import WebSocketTransport

CAPS = Capabilities.model_validate({"injection": {"buffered": True}})


def test_initialize_and_a_bad_frame_over_a_websocket() -> None:
    async def run() -> None:
        async def harness_side(request: web.Request) -> web.WebSocketResponse:
            socket = web.WebSocketResponse()
            await socket.prepare(request)
            connection = Connection(WebSocketTransport(socket), name="host")
            accept_initialize(connection, ClientInfo(name="remote-harness", version="1"), CAPS)
            connection.start()
            await connection.closed.wait()
            return socket

        app = web.Application()
        app.router.add_get("/c2a", harness_side)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            async with asyncio.timeout(10), aiohttp.ClientSession() as http:
                socket = await http.ws_connect(f"http://127.0.0.1:{port}/c2a")
                host = Connection(WebSocketTransport(socket), name="harness")
                host.start()
                session = await initialize(host, ClientInfo(name="c2a-host", version="0.1"), CAPS)
                assert session.version == COMPACT_VIEW
                assert session.peer.name == "remote-harness"
                # A bad frame is answered with a parse error (id null) and the link goes on.
                await socket.send_str("{not json")
                while not host.bad_lines:
                    await asyncio.sleep(0.01)
                assert "unknown request id None" in host.bad_lines[0].reason
                with pytest.raises(RpcError, match="invalid initialize params"):
                    await host.request("initialize", {"bad": True}, timeout=5)
                await host.close()
        finally:
            await runner.cleanup()

    asyncio.run(run())
