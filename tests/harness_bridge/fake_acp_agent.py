"""A fake ACP agent (the SDK's agent side) for the `acp` backend's tests: it records what it
receives as JSON lines in the file named by `FAKE_ACP_RECORD`, asks permission for the tools
named in `FAKE_ACP_ASK` (comma-separated) during each prompt, and says "ok"; with
`FAKE_ACP_HANG` set it instead waits for `session/cancel`."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from acp import PROTOCOL_VERSION, run_agent, update_agent_message_text
from acp.schema import (
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)


def record(kind: str, **data: Any) -> None:
    with open(os.environ["FAKE_ACP_RECORD"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"kind": kind, **data}) + "\n")


class FakeAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.sessions = 0
        self.cancelled = asyncio.Event()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        record("initialize", protocol_version=protocol_version)
        return InitializeResponse(protocol_version=PROTOCOL_VERSION)

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        self.sessions += 1
        servers = [s.model_dump(mode="json", by_alias=True) for s in mcp_servers or []]
        record("new_session", cwd=cwd, mcp_servers=servers)
        return NewSessionResponse(session_id=f"s{self.sessions}")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        record("prompt", session_id=session_id, text=text)
        for name in filter(None, os.environ.get("FAKE_ACP_ASK", "").split(",")):
            answer = await self.conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id=f"call-{name}", title=name),
                options=[
                    PermissionOption(option_id="yes", name="Allow once", kind="allow_once"),
                    PermissionOption(option_id="always", name="Always", kind="allow_always"),
                    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
                ],
            )
            record(
                "permission",
                tool=name,
                outcome=answer.outcome.model_dump(by_alias=True, exclude_none=True),
            )
        if os.environ.get("FAKE_ACP_HANG"):  # wait for session/cancel
            await asyncio.wait_for(self.cancelled.wait(), 10)
            return PromptResponse(stop_reason="cancelled")
        await self.conn.session_update(session_id, update_agent_message_text("ok"))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        record("cancel", session_id=session_id)
        self.cancelled.set()


if __name__ == "__main__":
    asyncio.run(run_agent(FakeAgent()))
