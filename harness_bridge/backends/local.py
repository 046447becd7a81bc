"""The `local` backend: the built-in model loop with a model that needs no setup.

    harness: {backend: local}

Its turns take the text reply path by default (`reply: text`, `harness_bridge.backends.
text_reply`): the model is asked for the answer itself, never for tool calls, which a model as
small as the bundled one cannot follow; `reply: tools` gives it the tool protocol instead, as
below. When the environment variable named by `endpoint_env` (`C2A_MODEL_URL`) holds a base URL, the
loop talks to that OpenAI-compatible server, asking for the model named by `model_env`
(`C2A_MODEL`, else `default`), with every chat tool. Without one, a model server already
running on this machine is looked for (`discover`: Ollama, llama.cpp's server, LM Studio) and
used the same way, with `C2A_MODEL` or its first model. Otherwise SmolLM2-135M-Instruct, or the
GGUF file at `model_path`, runs in this process (`LocalModelClient`, which needs the `local`
extra); every local agent of the process shares that one loaded model, and while `make run`
is still installing that extra in the background (`local_install`), the agent waits for it
with its events pending (`waiting`). On the tool path, a model that small does best with
little to choose from, so in process the loop offers only the two answering tools and,
unless `instructions` say otherwise, tells the model to answer with them; `tools` names the
chat tools to offer instead. The variables are read, and the machine looked at, when the
harness is built. A missing extra or model file is one manifest error saying how to install it.
Every harness built here says which model answers it and how to switch (`model_status`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import Field, field_validator

from core.errors import ManifestError
from harness_bridge.backends.builtin import LoopSettings, loop_harness
from harness_bridge.backends.chat_client import ChatClient
from harness_bridge.backends.chat_completions import ModelError
from harness_bridge.backends.discover import find_server, ports_from
from harness_bridge.backends.local_install import Install
from harness_bridge.backends.local_model import LocalModelClient
from harness_bridge.backends.model_status import ModelStatus
from harness_bridge.backends.registry import Harness, HarnessContext, validate
from harness_bridge.backends.text_reply import Volunteers
from harness_bridge.backends.waiting import WaitingHarness
from harness_bridge.runtime import InProcessHarness
from harness_bridge.tools import TOOL_NAMES

__all__ = [
    "BUNDLED_MODEL",
    "DEFAULT_MODEL",
    "IN_PROCESS_INSTRUCTIONS",
    "IN_PROCESS_TOOLS",
    "LocalSettings",
]

log = logging.getLogger(__name__)

DEFAULT_MODEL: Final = "default"
BUNDLED_MODEL: Final = "SmolLM2-135M-Instruct"
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


def from_settings(context: HarnessContext, settings: Mapping[str, Any]) -> Harness:
    """The `c2a.backends` entry point for `local`."""
    agent = context.agent
    parsed = validate(LocalSettings, agent, settings)
    url = os.environ.get(parsed.endpoint_env, "").strip()
    model = os.environ.get(parsed.model_env, "").strip()
    if url:
        if not url.startswith(("http://", "https://")):
            raise ManifestError(
                f"agents.{agent}.harness: {parsed.endpoint_env}={url!r} is not an http(s) URL"
            )
        where = f"the server at {url} ({parsed.endpoint_env})"
        return _on_server(context, parsed, url, model or DEFAULT_MODEL, where, "")
    found = find_server(ports_from(os.environ), model or None)
    if found is not None:
        log.info(
            "%s: using %s at %s (model %s), found on this machine; %s=... names another server",
            agent,
            found.server,
            found.base_url,
            found.model,
            parsed.endpoint_env,
        )
        where = f"{found.server} at {found.base_url}, found on this machine"
        hint = f"set {parsed.model_env}=NAME to use another of its models"
        return _on_server(context, parsed, found.base_url, found.model, where, hint)
    install = Install.from_environ(os.environ)
    if install is not None and install.state() != "installed":
        return WaitingHarness(
            agent,
            install,
            lambda: _in_process(context, parsed),
            _in_process_status(parsed),
            binding="llama_cpp",
        )
    return _in_process(context, parsed)


def _on_server(
    context: HarnessContext,
    parsed: LocalSettings,
    url: str,
    model: str,
    where: str,
    hint: str,
) -> InProcessHarness:
    client = ChatClient(url, model, timeout=parsed.timeout_s, options=parsed.options)
    status = ModelStatus(model, where, hint=hint)
    tools = parsed.tools or TOOL_NAMES
    return loop_harness(context, parsed, client, tools, "text", status)


def _in_process(context: HarnessContext, parsed: LocalSettings) -> InProcessHarness:
    try:
        local = LocalModelClient(parsed.model_path, options=parsed.options)
    except ModelError as exc:
        raise ManifestError(f"agents.{context.agent}.harness: {exc}") from None
    if parsed.instructions is None:
        parsed = parsed.model_copy(update={"instructions": IN_PROCESS_INSTRUCTIONS})
    tools = parsed.tools or IN_PROCESS_TOOLS
    status = _in_process_status(parsed)
    # The bundled model cannot tell whether a message is for it (text_reply: `volunteers`).
    volunteers: Volunteers = "always" if parsed.model_path is None else "ask"
    return loop_harness(context, parsed, local, tools, "text", status, volunteers)


def _in_process_status(parsed: LocalSettings) -> ModelStatus:
    """The in-process model as the page shows it, with the one step to a real one."""
    if parsed.model_path is not None:
        model, where = Path(parsed.model_path).stem, "in process"
    else:
        model, where = BUNDLED_MODEL, "bundled, in process"
    hint = (
        f"set {parsed.endpoint_env}=http://127.0.0.1:11434/v1 {parsed.model_env}=qwen2.5:7b "
        "to use Ollama (or any OpenAI-compatible server)"
    )
    return ModelStatus(model, where, hint=hint)
