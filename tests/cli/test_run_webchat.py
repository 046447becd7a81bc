"""`c2a run` with the web chat end to end in-process: a browser's websocket, the real page
server, the host and ledger, the built-in model loop against a model that answers by rule."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from builders import LOCAL, ROOT
from fakes.attentive_model import AttentiveModel
from fakes.openai_server import FakeOpenAI, streamed, text_chunk
from webchat_run import webchat_run

from adapters.webchat.access import TOKEN_ENV
from adapters.webchat.server import WebChat
from c2a.logs import configure_logging
from c2a.run import WorkspaceRun, run_workspaces
from core.errors import ManifestError
from harness_bridge.backends.builtin import BuiltinHarness
from harness_bridge.backends.local_model import LocalModelClient
from harness_bridge.backends.text_reply import TextReplyLoop
from harness_bridge.streamed_reply import WRITING

REAL_MODEL_S = 180.0  # the first words of the real model on a busy CI machine
SAID = ("message", "edit")  # the ledger kinds that hold what someone wrote
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

    async def read(self) -> None:
        """Keep every frame the page gets, until cancelled."""
        async for frame in self.socket:
            self.frames.append(frame.json())

    def replies_to(self, message_id: str) -> list[str]:
        return [m.user for m in self.chat.history if m.reply_to == message_id]

    async def settle(self) -> None:
        """Ask the lead once more in the channel and wait for that answer. The page, the host
        and the lead's turns in one conversation all go in order, and the outbox posts in
        order, so any reply owed to what was said before has been posted by then."""
        last = await self.post("@lead one last thing: is the build green?")
        await until(lambda: self.replies_to(last) == ["lead"], "the lead's last reply")


def acked(chat: WebChat, message: str, agent: str) -> bool:
    """Whether `agent` has reacted to `message` in the web chat."""
    shown = chat.history.messages.get(message)
    return shown is not None and any(agent in users for users in shown.reactions.values())


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
        async with webchat_run(manifest, tmp / "data", environ) as (_, chat, socket):
            yield Browser(socket, chat), model


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
        # c2a's own shape (`core.redact.new_token`), which redaction finds wherever it is pasted.
        assert re.fullmatch(r"http://127\.0\.0\.1:[0-9]+/\?token=c2a_[A-Za-z0-9_-]{43}", url), url
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


def test_a_question_is_answered_by_one_message_that_grows_as_the_model_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make run`'s manifest on a model behind C2A_MODEL_URL, on the `local` backend's text
    path: the question's answer is posted at its first words and redrawn in place as it grows,
    typing shows until the first words; the ledger and the web chat's record keep the first
    words (marked as still being written) and the final text, never a half-written draft;
    chatter and thanks cost no model request and get no reply; the model is asked for text,
    with no tools."""
    pieces = ["The deploy ", "is green: ", "42 of 42 ", "checks ", "passed."]
    answer = "".join(pieces)
    begun = pieces[0].strip() + WRITING

    async def scenario() -> None:
        script = [streamed(*map(text_chunk, pieces), pause=0.7)]
        async with FakeOpenAI(script) as model:
            monkeypatch.setenv("C2A_MODEL_URL", model.base_url)
            monkeypatch.setenv("C2A_MODEL", "plain-text")
            async with shipped(tmp_path) as (run, browser):
                chat = browser.chat
                reading = asyncio.create_task(browser.read())
                chatter = await browser.post("lunch is at noon")
                asked = await browser.post("@lead what's the status of the deploy?")
                await until(lambda: browser.replies_to(asked) == ["lead"], "the lead's reply")
                [reply] = [m for m in chat.history if m.reply_to == asked]
                await until(lambda: reply.text == answer, "the whole answer", 20)
                thanks = await browser.post("thanks!")
                # The lead acknowledges the thanks with a reaction (no model call): once it is
                # shown, the thanks has been decided and handled, so any reply would be there.
                await until(lambda: acked(chat, thanks, "lead"), "the lead's reaction to thanks")
                reading.cancel()
                assert browser.replies_to(chatter) == []
                assert browser.replies_to(thanks) == []
                assert len(model.requests) == 1
                [request] = model.requests
                assert "tools" not in request and request["stream"] is True
                assert "what's the status" in request["messages"][-1]["content"]

                shown = [f["message"]["text"] for f in browser.frames if _is(f, reply.id)]
                assert shown[0] == begun and shown[-1] == answer
                assert len(shown) >= 4, shown  # posted, redrawn at least twice, finished
                assert all(answer.startswith(text.removesuffix(WRITING)) for text in shown)
                typing = [
                    (i, f["on"])
                    for i, f in enumerate(browser.frames)
                    if f["op"] == "typing" and f["user"] == "lead"
                ]
                first = next(i for i, f in enumerate(browser.frames) if _is(f, reply.id))
                last = max(i for i, f in enumerate(browser.frames) if _is(f, reply.id))
                assert typing[0] == (typing[0][0], True) and typing[0][0] < first
                assert any(not on and i < last for i, on in typing), typing

                said = run.store.db.execute(
                    "SELECT kind, data FROM events WHERE by LIKE '%lead%' ORDER BY seq"
                ).fetchall()
                texts = [d["text"] for _, raw in said if (d := json.loads(raw))["kind"] in SAID]
                assert texts == [begun, answer], said
                record = (tmp_path / "data" / "local.webchat.jsonl").read_text().splitlines()
                written = [json.loads(line) for line in record]
                mine = [p.get("text") for p in written if p.get("user") == "lead" and "text" in p]
                assert mine == [begun, answer]

    asyncio.run(scenario())


def test_a_question_to_a_fresh_room_gets_one_agents_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make run`'s #general gives a question that names nobody to one agent
    (`questions: select`): a new user's first question, with no agent yet in any exchange
    for the scorer to go on, is answered once; a remark to the room is not answered."""

    async def scenario() -> None:
        async with FakeOpenAI([streamed(text_chunk("Paris."))]) as model:
            monkeypatch.setenv("C2A_MODEL_URL", model.base_url)
            monkeypatch.setenv("C2A_MODEL", "plain-text")
            async with shipped(tmp_path) as (run, browser):
                remark = await browser.post("the coffee machine is fixed")
                asked = await browser.post("what is the capital of France?")
                await until(lambda: len(browser.replies_to(asked)) == 1, "one agent's reply")
                [reply] = [m for m in browser.chat.history if m.reply_to == asked]
                await until(lambda: reply.text == "Paris.", "the whole answer")
                await asyncio.wait_for(
                    asyncio.gather(*(h.idle() for h in run.harnesses.values())), 20
                )
                assert browser.replies_to(remark) == []
                assert len(browser.replies_to(asked)) == 1 and len(model.requests) == 1

    asyncio.run(scenario())


def test_the_bundled_model_answers_a_direct_question_in_the_web_chat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make run` as it ships: SmolLM2-135M loaded for real in the process, shared by the
    three agents. A direct question to the lead gets one reply in the web chat, its first
    words within the CI bound and then finished; the workers stay quiet. The model's words
    are not judged (it is tiny), only that an answer came, in time, once."""
    monkeypatch.delenv("C2A_MODEL_URL", raising=False)

    async def scenario() -> None:
        async with shipped(tmp_path) as (run, browser):
            reading = asyncio.create_task(browser.read())
            asked = await browser.post("@lead what is 2 + 2?")
            started = time.perf_counter()
            await until(lambda: bool(browser.replies_to(asked)), "the first words", REAL_MODEL_S)
            first = time.perf_counter() - started
            [reply] = [m for m in browser.chat.history if m.reply_to == asked]
            lead = run.harnesses["lead"]
            assert isinstance(lead, BuiltinHarness)
            await asyncio.wait_for(lead.idle(), 60)  # the turn, and so the reply, has ended
            [(edits,)] = run.store.db.execute(
                "SELECT COUNT(*) FROM outbox WHERE json_extract(action, '$.action') = 'edit'"
                " AND json_extract(action, '$.draft') IS NULL"
            ).fetchall()
            if edits:  # the answer grew after its first words: its final text lands as an edit
                await until(lambda: not reply.text.endswith(WRITING), "the final text")
                assert not reply.edited  # finished, not edited
            reading.cancel()
            print(f"\nSmolLM2 in the web chat: first words after {first:.1f} s: {reply.text!r}")
            assert reply.user == "lead" and reply.text.strip()
            assert browser.replies_to(asked) == ["lead"]
            models = [h.model_loop for h in run.harnesses.values() if isinstance(h, BuiltinHarness)]
            clients = [m.model for m in models if isinstance(m, TextReplyLoop)]
            assert len(clients) == 3
            assert len({id(c.shared) for c in clients if isinstance(c, LocalModelClient)}) == 1

    asyncio.run(scenario())


@asynccontextmanager
async def shipped(tmp: Path) -> AsyncIterator[tuple[WorkspaceRun, Browser]]:
    """`make run`'s manifest run in-process as it ships (the model from the environment), and a
    socket opened as the page opens it."""
    async with webchat_run(SHIPPED, tmp / "data") as (run, chat, socket):
        yield run, Browser(socket, chat)


def _is(frame: dict[str, Any], message_id: str) -> bool:
    return frame["op"] == "message" and frame["message"]["id"] == message_id
