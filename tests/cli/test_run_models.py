"""`c2a run` on `make run`'s manifest tells the page which model answers each agent: the
bundled model being built in the background (with the minutes' start and the log), then that
the build failed (with the log's path), a person's message meanwhile pending, not refused; or
a model server found on this machine. In-process, with a real websocket and the run's token."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from fakes.openai_server import FakeOpenAI
from fakes.threaded import in_thread
from test_run_webchat import SHIPPED, until
from webchat_run import webchat_run

from adapters.webchat.server import WebChat
from harness_bridge.backends.local_install import Install

AGENTS = ["lead", "worker-1", "worker-2"]


class Page:
    """One page's socket and every frame it got."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse, chat: WebChat) -> None:
        self.socket = socket
        self.chat = chat
        self.frames: list[dict[str, Any]] = []

    async def read(self) -> None:
        async for message in self.socket:
            self.frames.append(message.json())

    def models(self) -> dict[str, dict[str, Any]]:
        """What the page was last told about the models."""
        told = [f["models"] for f in self.frames if f["op"] in ("hello", "models")]
        return told[-1] if told else {}


@asynccontextmanager
async def page(tmp: Path) -> AsyncIterator[Page]:
    """`c2a run` of the shipped manifest, and its page's socket."""
    async with webchat_run(SHIPPED, tmp / "data") as (_, chat, socket):
        shown = Page(socket, chat)
        reader = asyncio.create_task(shown.read())
        try:
            await until(lambda: bool(shown.frames), "the hello")
            yield shown
        finally:
            reader.cancel()


def test_while_the_model_builds_the_page_says_so_then_that_it_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install = Install(tmp_path / "local-install.log")
    install.log.write_text("compiling llama.cpp [3/180]\n")
    install.pid_file.write_text(str(os.getpid()))
    monkeypatch.delenv("C2A_MODEL_URL", raising=False)
    monkeypatch.setenv("C2A_MODEL_INSTALL", str(install.log))

    async def scenario() -> None:
        async with page(tmp_path) as shown:
            models = shown.models()
            assert sorted(models) == AGENTS
            for model in models.values():
                assert model["model"] == "SmolLM2-135M-Instruct"
                assert model["where"] == "bundled, in process"
                assert model["state"] == "building"
                assert model["since"] == install.pid_file.stat().st_mtime
                assert model["log"] == str(install.log)
                assert "C2A_MODEL_URL=http://127.0.0.1:11434/v1" in model["hint"]
            await shown.socket.send_json(
                {"op": "post", "as": "ana", "channel": "dm:ana:lead", "text": "are you there?"}
            )
            await until(lambda: _chips(shown) == ["pending"], "the DM's delivery, pending")

            install.exit_file.write_text("1\n")
            await until(lambda: shown.models()["lead"]["state"] == "failed", "the failure")
            detail = shown.models()["lead"]["detail"]
            assert (
                detail
                == f"installing the bundled model ended with status 1; its log is {install.log}"
            )
            assert _chips(shown) == ["pending"]  # kept for a later run, not refused

    asyncio.run(scenario())


def _chips(shown: Page) -> list[str]:
    chips = [f["agents"] for f in shown.frames if f["op"] == "attention"]
    return [chip["status"] for chip in chips[-1]] if chips else []


def test_a_model_server_running_here_is_used_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("C2A_MODEL_URL", raising=False)
    monkeypatch.delenv("C2A_MODEL", raising=False)

    async def scenario(port: int, base_url: str) -> None:
        monkeypatch.setenv("C2A_MODEL_PORTS", str(port))
        async with page(tmp_path) as shown:
            for model in shown.models().values():
                assert model["model"] == "qwen2.5:7b"
                assert (
                    model["where"]
                    == f"an OpenAI-compatible server at {base_url}, found on this machine"
                )
                assert model["state"] == "ready"

    with (
        in_thread(FakeOpenAI([], models=["qwen2.5:7b"])) as server,
        caplog.at_level(logging.INFO),
    ):
        asyncio.run(scenario(server.port, server.base_url))
    where = f"an OpenAI-compatible server at {server.base_url}, found on this machine"
    assert f"local: lead answers with qwen2.5:7b ({where})" in caplog.messages
