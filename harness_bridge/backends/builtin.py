"""The `openai` backend as the manifest names it: the built-in model loop against any
OpenAI-compatible server, run by an in-process harness.

    harness: {backend: openai, base_url: "http://127.0.0.1:11434/v1", model: "qwen2.5:7b"}

It also owns what every backend of the built-in loop shares (the `local` backend too): the
loop's settings, their validation, which path the agent's turns take (`reply: tools`, the full
tool protocol, or `reply: text`, a plain answer for a small model:
`harness_bridge.backends.text_reply`; each backend has its default), and the harness that
closes the loop's client when it stops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from core.agent_port import AgentPort
from core.deliveries import DeliveryPort
from harness_bridge.backends.chat_client import ChatClient
from harness_bridge.backends.chat_completions import ModelClient
from harness_bridge.backends.model_status import ModelStatus
from harness_bridge.backends.openai import OpenAIModelLoop
from harness_bridge.backends.registry import HarnessContext, validate
from harness_bridge.backends.text_reply import TextModel, TextReplyLoop, Volunteers
from harness_bridge.runtime import InProcessHarness, ModelLoop
from harness_bridge.tools import TOOL_NAMES, ChatTools
from harness_bridge.working import working

__all__ = [
    "BuiltinHarness",
    "LoopSettings",
    "OpenAISettings",
    "Reply",
    "from_settings",
    "loop_harness",
]


Reply = Literal["text", "tools"]


class LoopSettings(BaseModel):
    """The settings of the built-in model loop, whatever model answers it. `reply` picks the
    path (None: the backend's default)."""

    model_config = ConfigDict(extra="forbid")

    reply: Reply | None = None

    max_tool_rounds: int = Field(default=8, ge=1)
    quiet_ms: int = Field(default=3000, ge=0)
    timeout_s: float = Field(default=120.0, gt=0)  # each request to a model server
    # On the text path, a `may_respond` event nobody holds: `ask` the model yes or no, or take
    # it `always` (None: the backend's default, `always` for the bundled model only).
    volunteers: Volunteers | None = None
    instructions: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class OpenAISettings(LoopSettings):
    """`harness: {backend: openai, base_url, model, ...}`."""

    backend: Literal["openai"]
    base_url: str = Field(pattern=r"^https?://")
    model: str = Field(min_length=1)
    api_key_env: str | None = None


class ClosingLoop(ModelLoop, Protocol):
    """A model loop that holds a client to close."""

    async def aclose(self) -> None: ...


class BuiltinHarness(InProcessHarness):
    """The in-process harness of a built-in loop; stopping it closes the loop's client.
    `status` says which model answers it."""

    def __init__(
        self,
        port: AgentPort,
        deliveries: DeliveryPort,
        loop: ClosingLoop,
        quiet_ms: int,
        status: ModelStatus | None = None,
    ) -> None:
        super().__init__(port, deliveries, loop, port.clock, quiet_ms=quiet_ms)
        self.model_loop = loop
        self.status = status or ModelStatus("a model", "the built-in model loop")

    def model_status(self) -> ModelStatus:
        return self.status

    async def stop(self) -> None:
        await super().stop()
        await self.model_loop.aclose()


class Client(ModelClient, TextModel, Protocol):
    """A client that serves both paths (`ChatClient`, `LocalModelClient`)."""


def loop_harness(
    context: HarnessContext,
    parsed: LoopSettings,
    client: Client,
    tools: Sequence[str] = TOOL_NAMES,
    reply: Reply = "tools",
    status: ModelStatus | None = None,
    volunteers: Volunteers = "ask",
) -> BuiltinHarness:
    """The agent's harness: the built-in loop with `parsed`, answered by `client`; on the tool
    path offering the chat `tools` named. `reply` and `volunteers` are the path and the text
    path's way with open `may_respond` events unless `parsed` names them; `status` describes
    the model."""
    port, deliveries = context.port, context.deliveries
    chat_tools = ChatTools(port)
    if (parsed.reply or reply) == "text":
        cleared = partial(working, port, on=False)
        text = TextReplyLoop(
            chat_tools,
            client,
            cleared,
            streaming=context.streaming,
            limits=context.draft_limits,
            volunteers=parsed.volunteers or volunteers,
        )
        return BuiltinHarness(port, deliveries, text, parsed.quiet_ms, status)
    loop = OpenAIModelLoop(
        "",  # the client is given: the loop builds none, so it needs no URL or model
        "",
        chat_tools,
        specs=[spec for spec in ChatTools.specs() if spec["name"] in tools],
        client=client,
        max_tool_rounds=parsed.max_tool_rounds,
        instructions=parsed.instructions,
    )
    return BuiltinHarness(port, deliveries, loop, parsed.quiet_ms, status)


def from_settings(context: HarnessContext, settings: Mapping[str, Any]) -> InProcessHarness:
    """The `c2a.backends` entry point for `openai`."""
    parsed = validate(OpenAISettings, context.agent, settings)
    client = ChatClient(
        parsed.base_url,
        parsed.model,
        api_key_env=parsed.api_key_env,
        timeout=parsed.timeout_s,
        options=parsed.options,
    )
    status = ModelStatus(parsed.model, f"the server at {parsed.base_url}")
    return loop_harness(context, parsed, client, status=status)
