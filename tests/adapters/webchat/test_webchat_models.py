"""The web chat tells the page which model answers each agent and whether it is ready: in
`hello`, and in a `models` frame whenever that changes (a build ending, say); on the real
server, through a socket opened with the run's token."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from live_webchat import running

BUILDING = {
    "model": "SmolLM2-135M-Instruct",
    "where": "bundled, in process",
    "state": "building",
    "since": 1767225600.0,
    "log": "/tmp/c2a/local-install.log",
    "detail": "",
    "hint": "set C2A_MODEL_URL=http://127.0.0.1:11434/v1 C2A_MODEL=qwen2.5:7b to use Ollama",
}


def test_the_page_is_told_each_agents_model_and_when_it_becomes_ready(tmp_path: Path) -> None:
    models: dict[str, dict[str, Any]] = {
        "lead": dict(BUILDING),
        "worker-1": dict(BUILDING),
        "worker-2": {**BUILDING, "model": "qwen2.5:7b", "where": "Ollama", "state": "ready"},
    }

    async def scenario() -> None:
        async with running(tmp_path, models=lambda: models) as chat:
            hello = await chat.frame(lambda f: f["op"] == "hello")
            assert hello["models"] == models
            models["lead"] = models["worker-1"] = {**BUILDING, "state": "ready", "since": None}
            ready = await chat.frame(
                lambda f: f["op"] == "models" and f["models"]["lead"]["state"] == "ready"
            )
            assert ready["models"] == models
            await asyncio.sleep(1.0)  # many refreshes: nothing changed, nothing more is sent
            assert len([f for f in chat.frames if f["op"] == "models"]) == 1  # the change

    asyncio.run(scenario())


def test_without_models_the_page_is_told_none(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running(tmp_path) as chat:
            hello = await chat.frame(lambda f: f["op"] == "hello")
            assert hello["models"] == {}

    asyncio.run(scenario())
