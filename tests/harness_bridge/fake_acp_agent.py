"""A fake ACP agent (the SDK's agent side) for the `acp` backend's tests, run as a subprocess.

It records what it receives as JSON lines in the file named by `FAKE_ACP_RECORD`, which also
carries its state from one of its processes to the next (session ids, the prompt it hung on).
For each prompt it asks permission for the tools named in `FAKE_ACP_ASK` (comma-separated),
reports progress (a plan, a tool call, a thought and a message chunk), and answers every
must_respond event of the prompt with `chat_send_message` through the MCP server it was given
in `session/new`. The first prompt (in any of its processes) containing the text in
`FAKE_ACP_HANG` waits for `session/cancel` instead. With `FAKE_ACP_LOAD` set it advertises
`loadSession` and loads any session it opened before. With `FAKE_ACP_HTTP` set it advertises
MCP servers over HTTP (`mcpCapabilities.http`) and calls the HTTP server it is given, with the
headers it is given (`FAKE_ACP_HTTP=bare`: without them). `FAKE_ACP_STDERR` is a line it writes
to its stderr when initialized.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    RequestError,
    plan_entry,
    run_agent,
    start_tool_call,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
)
from acp.schema import (
    AgentCapabilities,
    HttpMcpServer,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)

from harness_bridge.prompt import parse_rendered


def record(kind: str, **data: Any) -> None:
    with open(os.environ["FAKE_ACP_RECORD"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"kind": kind, **data}) + "\n")


def records() -> list[dict[str, Any]]:
    try:
        with open(os.environ["FAKE_ACP_RECORD"], encoding="utf-8") as lines:
            return [json.loads(line) for line in lines]
    except FileNotFoundError:
        return []


class FakeAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.servers: dict[str, list[McpServerStdio | HttpMcpServer]] = {}
        self.cwd: dict[str, str] = {}
        self.cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        names = sorted(os.environ)  # what it was given, by name only
        record("initialize", protocol_version=protocol_version, pid=os.getpid(), environ=names)
        if "FAKE_ACP_STDERR" in os.environ:
            print(os.environ["FAKE_ACP_STDERR"], file=sys.stderr, flush=True)
        load = bool(os.environ.get("FAKE_ACP_LOAD"))
        http = McpCapabilities(http=bool(os.environ.get("FAKE_ACP_HTTP")))
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=load, mcp_capabilities=http),
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        opened = [r for r in records() if r["kind"] == "new_session"]
        session_id = f"s{len(opened) + 1}"
        servers = [s.model_dump(mode="json", by_alias=True) for s in mcp_servers or []]
        record("new_session", session_id=session_id, cwd=cwd, mcp_servers=servers)
        self._open(session_id, cwd, mcp_servers)
        return NewSessionResponse(session_id=session_id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse:
        known = {r["session_id"] for r in records() if r["kind"] == "new_session"}
        if session_id not in known:
            raise RequestError.resource_not_found(session_id)
        servers = [s.model_dump(mode="json", by_alias=True) for s in mcp_servers or []]
        record("load_session", session_id=session_id, mcp_servers=servers)
        # Replaying the history, as the protocol asks: not progress of any turn.
        await self.conn.session_update(session_id, update_agent_message_text("(history)"))
        self._open(session_id, cwd, mcp_servers)
        return LoadSessionResponse()

    def _open(self, session_id: str, cwd: str, servers: list[Any] | None) -> None:
        kinds = (McpServerStdio, HttpMcpServer)
        self.servers[session_id] = [s for s in servers or [] if isinstance(s, kinds)]
        self.cwd[session_id] = cwd

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        hang = os.environ.get("FAKE_ACP_HANG", "")
        hung_before = any(r["kind"] == "prompt" and r["hang"] for r in records())
        hangs = bool(hang) and hang in text and not hung_before
        record("prompt", session_id=session_id, text=text, hang=hangs)
        ids = os.environ.get("FAKE_ACP_OPTION_PREFIX", "")  # the options' ids start with it
        for name in filter(None, os.environ.get("FAKE_ACP_ASK", "").split(",")):
            answer = await self.conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id=f"call-{name}", title=name),
                options=[
                    PermissionOption(option_id=f"{ids}yes", name="Allow once", kind="allow_once"),
                    PermissionOption(option_id=f"{ids}always", name="Always", kind="allow_always"),
                    PermissionOption(option_id=f"{ids}no", name="Reject", kind="reject_once"),
                ],
            )
            record(
                "permission",
                tool=name,
                outcome=answer.outcome.model_dump(by_alias=True, exclude_none=True),
            )
        if hangs:  # until session/cancel
            cancelled = self.cancelled.setdefault(session_id, asyncio.Event())
            await asyncio.wait_for(cancelled.wait(), 60)
            cancelled.clear()
            return PromptResponse(stop_reason="cancelled")
        update = self.conn.session_update
        await update(
            session_id, update_plan([plan_entry("read", status="completed"), plan_entry("answer")])
        )
        await update(session_id, start_tool_call("send", "chat_send_message", kind="other"))
        await update(session_id, update_agent_thought_text("replying"))
        await self.answer(session_id, text)
        await update(session_id, update_agent_message_text("ok"))
        return PromptResponse(stop_reason="end_turn")

    async def answer(self, session_id: str, text: str) -> None:
        events = [e for e in parse_rendered(text) if e.get("response_policy") == "must_respond"]
        if not events:
            return
        from mcp import ClientSession

        (server,) = self.servers[session_id]
        async with (
            self.connected(session_id, server) as (read, write),
            ClientSession(read, write) as mcp,
        ):
            await mcp.initialize()
            for event in events:
                arguments = {
                    "target": {"conversation": event["conversation"].split()[-1]},
                    "inReplyTo": event["event_id"],
                    "text": f"About {event.get('message', '')!r}: on it.",
                }
                result = await mcp.call_tool("chat_send_message", arguments)
                record(
                    "send",
                    event_id=event["event_id"],
                    error=result.is_error,
                    result=result.structured_content,
                )

    def connected(self, session_id: str, server: McpServerStdio | HttpMcpServer) -> Any:
        """The MCP client streams to `server`: a subprocess, or requests to a URL."""
        import httpx2
        from mcp import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client

        if isinstance(server, HttpMcpServer):
            bare = os.environ.get("FAKE_ACP_HTTP") == "bare"
            headers = {} if bare else {h.name: h.value for h in server.headers}
            client = httpx2.AsyncClient(headers=headers)
            return streamable_http_client(server.url, http_client=client)
        params = StdioServerParameters(
            command=server.command,
            args=server.args,
            env={v.name: v.value for v in server.env} or None,
            cwd=self.cwd[session_id],
        )
        return stdio_client(params)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        record("cancel", session_id=session_id)
        self.cancelled.setdefault(session_id, asyncio.Event()).set()


if __name__ == "__main__":
    asyncio.run(run_agent(FakeAgent()))
