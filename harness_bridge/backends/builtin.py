"""The `openai` backend as the manifest names it: the built-in model loop against any
OpenAI-compatible server, run by an in-process harness.

    harness: {backend: openai, base_url: "http://127.0.0.1:11434/v1", model: "qwen2.5:7b"}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.clock import SystemClock
from core.engine import Engine
from harness_bridge.backends.openai import OpenAIModelLoop
from harness_bridge.backends.registry import settings_error
from harness_bridge.runtime import InProcessHarness
from harness_bridge.tools import ChatTools

__all__ = ["OpenAISettings", "from_settings"]


class OpenAISettings(BaseModel):
    """`harness: {backend: openai, base_url, model, ...}`."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["openai"]
    base_url: str = Field(pattern=r"^https?://")
    model: str = Field(min_length=1)
    api_key_env: str | None = None
    timeout_s: float = Field(default=120.0, gt=0)
    max_tool_rounds: int = Field(default=8, ge=1)
    quiet_ms: int = Field(default=3000, ge=0)
    instructions: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class _Builtin(InProcessHarness):
    async def stop(self) -> None:
        await super().stop()
        if isinstance(self.loop, OpenAIModelLoop):
            await self.loop.aclose()


def from_settings(agent: str, engine: Engine, settings: Mapping[str, Any]) -> InProcessHarness:
    """The `c2a.backends` entry point for `openai`."""
    try:
        parsed = OpenAISettings.model_validate(dict(settings))
    except ValidationError as exc:
        raise settings_error(agent, exc) from None
    loop = OpenAIModelLoop(
        parsed.base_url,
        parsed.model,
        ChatTools(engine, agent),
        api_key_env=parsed.api_key_env,
        timeout=parsed.timeout_s,
        max_tool_rounds=parsed.max_tool_rounds,
        instructions=parsed.instructions,
        options=parsed.options,
    )
    return _Builtin(agent, engine, loop, SystemClock(), quiet_ms=parsed.quiet_ms)
