"""A harness on the C2A link calls the chat tools with MCP-shaped requests."""

from __future__ import annotations

from world import DM, scenario

from core.engine import Engine
from core.sqlite_store import SQLiteStore
from harness_bridge.link_tools import serve_tools
from harness_bridge.rpc import Connection
from harness_bridge.tools import ChatTools
from harness_bridge.transport import MemoryTransport


def test_tools_list_and_call_over_the_link() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        a, b = MemoryTransport.pair()
        host, harness = Connection(a, name="harness"), Connection(b, name="host")
        serve_tools(host, tools["lead"])
        host.start()
        harness.start()
        listed = await harness.request("tools/list")
        assert [t["name"] for t in listed["tools"]][:3] == [
            "chat_list_events",
            "chat_read_thread",
            "chat_send_message",
        ]
        args = {"target": {"conversation": "D0LEAD"}, "text": "Green.", "inReplyTo": DM}
        sent = await harness.request("tools/call", {"name": "chat_send_message", "arguments": args})
        assert sent["isError"] is False and sent["structuredContent"]["status"] == "queued"
        refused = await harness.request(
            "tools/call", {"name": "chat_defer", "arguments": {"eventId": "nope", "reason": "x"}}
        )
        assert refused["isError"] is True and "no event" in refused["content"][0]["text"]
        await host.close()
        await harness.close()

    scenario(test)
