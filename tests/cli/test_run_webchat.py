"""`c2a run` with the web chat end to end in-process: a browser's websocket, the real page
server, the host and ledger, the built-in model loop against a model that answers by rule."""

from __future__ import annotations

import asyncio
import io
import logging
import re
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from builders import LOCAL, ROOT
from fakes.attentive_model import AttentiveModel
from fakes.openai_server import FakeOpenAI, completion

from adapters.webchat.access import TOKEN_ENV
from adapters.webchat.server import WebChat
from c2a.logs import configure_logging
from c2a.run import WorkspaceRun, run_workspaces
from core.errors import ManifestError

SHIPPED = ROOT / "manifests" / "workspaces" / "local.yaml"  # what `make run` starts


def local_manifest(
    directory: Path, model_url: str, quiet_ms: int, webchat: Mapping[str, Any]
) -> Path:
    """The shipped local manifest, web chat only (`webchat` added to its section), each agent
    on the given model."""
    data = yaml.safe_load(LOCAL.read_text())
    data["webchat"].update(webchat)
    harness = {"backend": "openai", "base_url": model_url, "model": "m", "quiet_ms": quiet_ms}
    for agent in data["agents"].values():
        agent.pop("slack", None)
        agent.pop("discord", None)
        agent["harness"] = dict(harness)  # its own copy: a shared one is dumped as a YAML alias
    path = directory / "local.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


class Browser:
    """One page's websocket: what it sends and every frame it got."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse, chat: WebChat) -> None:
        self.socket = socket
        self.chat = chat
        self.frames: list[dict[str, Any]] = []

    async def post(self, text: str, channel: str = "general") -> str:
        """Post as ana; returns the new message's id."""
        before = len(self.chat.history.messages)
        await self.socket.send_json({"op": "post", "as": "ana", "channel": channel, "text": text})
        await until(lambda: len(self.chat.history.messages) > before, "the post to land")
        return list(self.chat.history.messages)[-1]

    def replies_to(self, message_id: str) -> list[str]:
        return [m.user for m in self.chat.history if m.reply_to == message_id]

    async def settle(self) -> None:
        """Ask the lead once more in the channel and wait for that answer. The page, the host
        and the lead's turns in one conversation all go in order, and the outbox posts in
        order, so any reply owed to what was said before has been posted by then."""
        last = await self.post("@lead one last thing: is the build green?")
        await until(lambda: self.replies_to(last) == ["lead"], "the lead's last reply")


async def until(test: Callable[[], bool], what: str, seconds: float = 15.0) -> None:
    try:
        async with asyncio.timeout(seconds):
            while not test():
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


@asynccontextmanager
async def live(
    tmp: Path,
    quiet_ms: int = 300,
    webchat: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> AsyncIterator[tuple[Browser, AttentiveModel]]:
    """`c2a run` in-process, and a socket opened as the page opens it: with the printed
    URL's token, from the page's own origin."""
    async with AttentiveModel() as model:
        manifest = local_manifest(tmp, model.base_url, quiet_ms, webchat or {})
        stop = asyncio.Event()
        runs: list[WorkspaceRun] = []
        task = asyncio.create_task(
            run_workspaces(
                [manifest],
                stop=stop,
                environ=environ or {},
                data_dir=tmp / "data",
                started=runs.extend,
                webchat_port=0,
            )
        )
        await until(lambda: bool(runs) or task.done(), "the workspace to start")
        chat = runs[0].webchat
        assert chat is not None
        async with (
            aiohttp.ClientSession() as http,
            http.ws_connect(chat.link("/ws"), origin=chat.origin) as socket,
        ):
            browser = Browser(socket, chat)
            yield browser, model
        stop.set()
        await task


def test_one_conversation_through_the_web_chat(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with live(tmp_path) as (browser, model):
            chatter = await browser.post("lunch is at noon")
            asked = await browser.post("@lead can you check the deploy?")
            await until(lambda: browser.replies_to(asked) == ["lead"], "the lead's reply")

            roles = await browser.post("@backend can someone look at the flaky test?")
            await until(lambda: len(browser.replies_to(roles)) == 1, "one worker's reply")
            claims = [c for c in model.calls if c[0] == "chat_claim"]
            assert len({args["eventId"] for _, args in claims}) == 1

            gone = await browser.post("@lead actually, ignore this")
            await browser.socket.send_json({"op": "delete", "as": "ana", "id": gone})
            await browser.settle()
            assert browser.replies_to(gone) == []
            assert browser.replies_to(chatter) == []
            assert browser.replies_to(asked) == ["lead"]
            assert len(browser.replies_to(roles)) == 1

    asyncio.run(scenario())


def test_the_printed_url_carries_a_new_token_each_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The URL reaches the person whole, token and all, on the terminal; the logs, which
    redact every secret, say where the page is without the token."""
    logs = io.StringIO()
    configure_logging("text", logs)

    async def scenario() -> list[str]:
        urls = []
        for _ in range(2):
            async with live(tmp_path) as (browser, _):
                urls.append(browser.chat.url)
        return urls

    urls = asyncio.run(scenario())
    printed = capsys.readouterr().err
    for url in urls:
        assert re.fullmatch(r"http://127\.0\.0\.1:[0-9]+/\?token=[A-Za-z0-9_-]{43}", url), url
        assert f"c2a: local: web chat ready, open {url}\n" in printed
        token = url.split("=")[1]
        assert token not in logs.getvalue()
        where = url.split("?")[0]
        assert f"local: web chat ready at {where} (open the URL printed" in logs.getvalue()
    assert urls[0].split("=")[1] != urls[1].split("=")[1]
    assert " WARNING " not in logs.getvalue()


def test_a_token_fixed_in_the_environment_is_the_one_printed(tmp_path: Path) -> None:
    fixed = "f" * 43

    async def scenario() -> None:
        async with live(tmp_path, environ={TOKEN_ENV: fixed}) as (browser, _):
            assert browser.chat.url.endswith(f"/?token={fixed}")
            await browser.post("hello with a fixed token")

    asyncio.run(scenario())


def test_serving_beyond_this_machine_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with live(tmp_path, webchat={"host": "0.0.0.0"}) as (browser, _):
            await browser.post("hello from anywhere")

    with caplog.at_level(logging.INFO, logger="c2a.run"):
        asyncio.run(scenario())
    warnings = [r for r in caplog.records if r.name == "c2a.run" and r.levelno == logging.WARNING]
    [warning] = [r.getMessage() for r in warnings]
    assert warning.startswith("local: the web chat listens on 0.0.0.0, not only on this machine")


def test_a_weak_fixed_token_stops_the_run_before_anything_starts(tmp_path: Path) -> None:
    manifest = local_manifest(tmp_path, "http://127.0.0.1:9/v1", 300, {})
    run = run_workspaces(
        [manifest], stop=asyncio.Event(), environ={TOKEN_ENV: "letmein"}, data_dir=tmp_path / "d"
    )
    with pytest.raises(ManifestError, match=f"^{TOKEN_ENV} must be 32 to 256 characters"):
        asyncio.run(run)
    assert not (tmp_path / "d").exists()


def test_a_model_that_answers_in_plain_text_is_heard_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make run`'s manifest on a model behind C2A_MODEL_URL that never calls a tool: the
    question gets its text as exactly one reply, chatter gets none, the thanks no reply."""
    answer = "The deploy is green: 42 of 42 checks passed."

    async def scenario() -> None:
        async with FakeOpenAI([completion(answer)] * 10) as model:
            monkeypatch.setenv("C2A_MODEL_URL", model.base_url)
            monkeypatch.setenv("C2A_MODEL", "plain-text")
            stop = asyncio.Event()
            runs: list[WorkspaceRun] = []
            task = asyncio.create_task(
                run_workspaces(
                    [SHIPPED],
                    stop=stop,
                    environ={},
                    data_dir=tmp_path / "data",
                    started=runs.extend,
                    webchat_port=0,
                )
            )
            await until(lambda: bool(runs) or task.done(), "the workspace to start")
            chat = runs[0].webchat
            assert chat is not None
            async with (
                aiohttp.ClientSession() as http,
                http.ws_connect(chat.link("/ws"), origin=chat.origin) as ws,
            ):
                browser = Browser(ws, chat)
                chatter = await browser.post("lunch is at noon")
                asked = await browser.post("@lead what's the status of the deploy?")
                await until(lambda: browser.replies_to(asked) == ["lead"], "the lead's reply")
                thanks = await browser.post("thanks!")
                await model.wait_requests(2)  # the question's turn, then the thanks' knock
                await browser.settle()
                texts = [m.text for m in chat.history if m.reply_to == asked]
                assert texts == [answer]
                assert browser.replies_to(chatter) == []
                assert browser.replies_to(thanks) == []
                asked_prompt = model.requests[0]["messages"][-1]["content"]
                assert "what's the status" in asked_prompt  # as written, not HTML-escaped
            stop.set()
            await task

    asyncio.run(scenario())
