"""The `local` backend: the built-in model loop with a model that needs no setup.

    harness: {backend: local}

Its turns take the text reply path by default (`reply: text`, `harness_bridge.backends.
text_reply`): the model is asked for the answer itself, never for tool calls, which a model as
small as the bundled one cannot follow; `reply: tools` gives it the tool protocol instead, as
below. When the environment variable named by `endpoint_env` (`C2A_MODEL_URL`) holds a base URL, the
loop talks to that OpenAI-compatible server, asking for the model named by `model_env`
(`C2A_MODEL`, else `default`), with every chat tool. Otherwise SmolLM2-135M-Instruct, or the
GGUF file at `model_path`, runs in this process (`LocalModelClient`, which needs the `local`
extra); every local agent of the process shares that one loaded model. On the tool path, a model
that small does best with little to choose from, so in process the loop offers only the two
answering tools and, unless `instructions` say otherwise, tells the model to answer
with them; `tools` names the chat tools to offer instead. The variables are read when the
harness is built. A missing extra or model file is one manifest error saying how to install it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final, Literal

from pydantic import Field, field_validator

from core.engine import Engine
from core.errors import ManifestError
from harness_bridge.backends.builtin import LoopSettings, loop_harness, validate
from harness_bridge.backends.chat_client import ChatClient
from harness_bridge.backends.chat_completions import ModelError
from harness_bridge.backends.local_model import LocalModelClient
from harness_bridge.runtime import InProcessHarness
from harness_bridge.tools import TOOL_NAMES

__all__ = ["DEFAULT_MODEL", "IN_PROCESS_INSTRUCTIONS", "IN_PROCESS_TOOLS", "LocalSettings"]

DEFAULT_MODEL: Final = "default"
IN_PROCESS_TOOLS: Final = ("chat_send_message", "chat_react")
IN_PROCESS_INSTRUCTIONS: Final = (
    "Answer every event you must respond to by calling a function: "
    "chat_send_message to reply, chat_react to react."
)


class LocalSettings(LoopSettings):
    """`harness: {backend: local, ...}`; every key is optional."""

    backend: Literal["local"]
    endpoint_env: str = Field(default="C2A_MODEL_URL", min_length=1)
    model_env: str = Field(default="C2A_MODEL", min_length=1)
    model_path: str | None = Field(default=None, min_length=1)
    tools: list[str] | None = Field(default=None, min_length=1)

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, tools: list[str] | None) -> list[str] | None:
        unknown = sorted(set(tools or ()) - set(TOOL_NAMES))
        if unknown:
            raise ValueError(f"unknown tools {unknown}; the tools are: {', '.join(TOOL_NAMES)}")
        return tools


def from_settings(agent: str, engine: Engine, settings: Mapping[str, Any]) -> InProcessHarness:
    """The `c2a.backends` entry point for `local`."""
    parsed = validate(LocalSettings, agent, settings)
    url = os.environ.get(parsed.endpoint_env, "").strip()
    if url:
        if not url.startswith(("http://", "https://")):
            raise ManifestError(
                f"agents.{agent}.harness: {parsed.endpoint_env}={url!r} is not an http(s) URL"
            )
        model = os.environ.get(parsed.model_env, "").strip() or DEFAULT_MODEL
        client = ChatClient(url, model, options=parsed.options)
        return loop_harness(agent, engine, parsed, client, parsed.tools or TOOL_NAMES, "text")
    try:
        local = LocalModelClient(parsed.model_path, options=parsed.options)
    except ModelError as exc:
        raise ManifestError(f"agents.{agent}.harness: {exc}") from None
    if parsed.instructions is None:
        parsed = parsed.model_copy(update={"instructions": IN_PROCESS_INSTRUCTIONS})
    return loop_harness(agent, engine, parsed, local, parsed.tools or IN_PROCESS_TOOLS, "text")
