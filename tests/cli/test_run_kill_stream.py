"""A streamed reply cut by SIGKILL, on Slack, Discord and the web chat: `c2a run` as a real
process (the real slack-bolt against the fake Slack, the real discord.py against the fake
Discord, or the web chat's own page server and a socket opened as the page opens it), the lead
on the text reply path against a scripted model that streams slowly. The process is killed
while the reply is being redrawn, then started again on the same data directory and asked
something else.

What a kill leaves, and what the restart does (docs/operator.md, "Streamed replies"): the one
message the reply had posted, showing what was written by then and marked as unfinished
(`WRITING`); the restart finishes it as cut and gives the question back to the lead, whose new
answer, begun as the cut one was, is drawn over that same message: no second message for one
question, and the next question is answered as usual. A question killed before its answer
began (the model was being asked) is asked again by the restart, at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from builders import (
    D_HUMAN,
    D_LEAD,
    GUILD,
    HUMAN,
    LEAD,
    TEAM,
    slack_body,
    slack_join,
    slack_message,
)
from fakes import openai_server as fake_openai
from fakes.discord import FakeDiscord
from fakes.slack import FakeSlack
from test_run import APP_TOKEN, BOT_TOKEN
from test_run import ENV as SLACK_ENV
from test_run import write_manifest as slack_manifest
from test_run_sigterm import ended, start, until

from adapters.webchat.access import TOKEN_ENV
from core.drafts import CUT_SHORT

FIRST = [f"first{i} " for i in range(400)]  # 20 s of words, a word every 50 ms
WHOLE = ["first0 ", "first1 ", "and that is the report."]  # begun as the cut one: its message
LATER = "The cache is warm."
WORKSPACE = "live"  # every platform's manifest names its workspace so: the ledger is live.sqlite3
HARNESS = {"backend": "openai", "model": "fake", "reply": "text"}


class Chat:
    """One platform's fake as the scenario drives it: it is entered around both runs, writes
    the manifest, asks the lead, and tells what its people see."""

    env: dict[str, str] = {}
    keeps_redraws = True  # whether what was redrawn before the kill stays on the page

    async def __aenter__(self) -> Chat:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None

    def manifest(self, directory: Path, model_url: str) -> Path:
        raise NotImplementedError

    async def ready(self, starts: int, log: Path) -> None:
        """Wait until the `starts`-th run, logging to `log`, can be asked."""
        raise NotImplementedError

    async def ask(self, text: str) -> str:
        """A person mentions the lead with `text`; returns the question's id on the platform."""
        raise NotImplementedError

    def event_id(self, question: str) -> str:
        raise NotImplementedError

    def redraws(self) -> int:
        """How many times the lead's messages were redrawn so far."""
        raise NotImplementedError

    def replies(self, question: str) -> list[str]:
        """The lead's answers to `question`, as the platform holds them now."""
        raise NotImplementedError

    def posts(self) -> int:
        """How many messages the lead posted, over both runs."""
        raise NotImplementedError


class SlackChat(Chat):
    env = SLACK_ENV

    async def __aenter__(self) -> SlackChat:
        self.slack = await FakeSlack(wait_timeout=120).__aenter__()
        self.slack.add_bot(BOT_TOKEN, LEAD, "B0LEAD", team_id=TEAM)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.slack.__aexit__(*exc_info)

    def manifest(self, directory: Path, model_url: str) -> Path:
        harness = {**HARNESS, "base_url": model_url}
        return slack_manifest(directory, api_url=self.slack.api_url, model_url="", harness=harness)

    async def ready(self, starts: int, log: Path) -> None:
        await self.slack.wait_connected(starts)
        if starts == 1:
            body = slack_body(slack_join(LEAD), via="lead")
            await self.slack.send_event(body, app_token=APP_TOKEN)

    async def ask(self, text: str) -> str:
        ts = f"{time.time():.6f}"
        body = slack_body(slack_message(ts, f"<@{LEAD}> {text}", user=HUMAN), via="lead")
        await self.slack.send_event(body, app_token=APP_TOKEN)
        return ts

    def event_id(self, question: str) -> str:
        return f"slack:{TEAM}:C0GEN:{question}"

    def redraws(self) -> int:
        return len(self.slack.calls_to("chat.update"))

    def replies(self, question: str) -> list[str]:
        said: list[dict[str, Any]] = self.slack.messages.get("C0GEN", [])
        mine = [m for m in said if m.get("user") == LEAD and m.get("thread_ts") == question]
        return [str(m["text"]) for m in mine]

    def posts(self) -> int:
        return len(self.slack.calls_to("chat.postMessage"))


class DiscordChat(Chat):
    CHANNEL = "820000000000000001"
    TOKEN = "lead-token-not-a-secret"
    env = {"DISCORD_LEAD_TOKEN": TOKEN}

    async def __aenter__(self) -> DiscordChat:
        self.fake = await FakeDiscord(guild_id=GUILD).__aenter__()
        self.fake._clock_ms = int(time.time() * 1000)  # ids from now: the run decides on it
        self.fake.add_bot(self.TOKEN, D_LEAD, "lead", "910000000000000001")
        self.fake.add_member(D_HUMAN, "ada.l")
        self.fake.add_channel(self.CHANNEL, "general")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.fake.__aexit__(*exc_info)

    def manifest(self, directory: Path, model_url: str) -> Path:
        settings = {"api_url": f"{self.fake.url}/api/v10", "gateway_url": f"{self.fake.ws_url}/"}
        lead = {"user_id": D_LEAD, "token_env": "DISCORD_LEAD_TOKEN"}
        harness = {**HARNESS, "base_url": model_url}
        agents = {"lead": {"lead": True, "discord": lead, "harness": harness}}
        return write(directory, {"discord": {"guild_id": GUILD, **settings}, "agents": agents})

    async def ready(self, starts: int, log: Path) -> None:
        await until(lambda: "discord agent lead: " in log.read_text(), "the bot")

    async def ask(self, text: str) -> str:
        message = await self.fake.user_says(self.CHANNEL, D_HUMAN, f"<@{D_LEAD}> {text}")
        return str(message["id"])

    def event_id(self, question: str) -> str:
        return f"discord:{question}"

    def redraws(self) -> int:
        return sum(c.method == "PATCH" for c in self.fake.calls if "/messages/" in c.path)

    def replies(self, question: str) -> list[str]:
        mine = [m for m in self.fake.messages.values() if m["author"]["id"] == D_LEAD]
        return [str(m["content"]) for m in mine if replied_to(m) == question]

    def posts(self) -> int:
        calls = self.fake.calls
        return sum(c.method == "POST" and c.path.endswith("/messages") for c in calls)


class WebchatChat(Chat):
    """The page, as a socket: every message frame it got, and what its last hello showed."""

    TOKEN = "t" * 43
    env = {TOKEN_ENV: TOKEN}
    keeps_redraws = False  # the record keeps a message as posted: a restart shows that

    async def __aenter__(self) -> WebchatChat:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.http = aiohttp.ClientSession()
        self.socket: aiohttp.ClientWebSocketResponse | None = None
        self.reading: asyncio.Task[None] | None = None
        self.shown: dict[str, dict[str, Any]] = {}  # message id -> as the page shows it
        self.frames: list[dict[str, Any]] = []
        self.ids: set[str] = set()  # every message the lead posted, over both runs
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.hang_up()
        await self.http.close()

    async def hang_up(self) -> None:
        if self.reading is not None:
            self.reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.reading
        if self.socket is not None:
            await self.socket.close()

    def manifest(self, directory: Path, model_url: str) -> Path:
        webchat = {"port": self.port, "channels": ["general"], "humans": ["ana"]}
        agents = {"lead": {"lead": True, "harness": {**HARNESS, "base_url": model_url}}}
        return write(directory, {"webchat": webchat, "agents": agents})

    async def ready(self, starts: int, log: Path) -> None:
        await self.hang_up()  # the page of the killed run lost its socket
        origin = f"http://127.0.0.1:{self.port}"
        while True:
            try:
                self.socket = await self.http.ws_connect(
                    f"{origin.replace('http', 'ws')}/ws?token={self.TOKEN}", origin=origin
                )
                break
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.1)
        self.shown = {}
        self.reading = asyncio.create_task(self.read(self.socket))
        await until(lambda: sum(f["op"] == "hello" for f in self.frames) == starts, "the hello")

    async def read(self, page: aiohttp.ClientWebSocketResponse) -> None:
        async for frame in page:
            body: dict[str, Any] = frame.json()
            self.frames.append(body)
            views = body["messages"] if body["op"] == "hello" else [body.get("message")]
            for view in filter(None, views):
                self.shown[view["id"]] = view
                if view["user"] == "lead":
                    self.ids.add(view["id"])

    async def ask(self, text: str) -> str:
        assert self.socket is not None
        before = set(self.shown)
        post = {"op": "post", "as": "ana", "channel": "general", "text": f"@lead {text}"}
        await self.socket.send_json(post)
        await until(lambda: any(m["user"] == "ana" for i, m in self.new(before)), "the post")
        return next(i for i, m in self.new(before) if m["user"] == "ana")

    def new(self, before: set[str]) -> list[tuple[str, dict[str, Any]]]:
        return [(i, m) for i, m in self.shown.items() if i not in before]

    def event_id(self, question: str) -> str:
        return f"webchat:{WORKSPACE}:{question}"

    def redraws(self) -> int:
        lead = [f for f in self.frames if f["op"] == "message" and f["message"]["user"] == "lead"]
        return len(lead) - len({f["message"]["id"] for f in lead})

    def replies(self, question: str) -> list[str]:
        mine = [m for m in self.shown.values() if m["user"] == "lead"]
        return [str(m["text"]) for m in mine if m["replyTo"] == question]

    def posts(self) -> int:
        return len(self.ids)


def replied_to(message: Any) -> str | None:
    """The id of the Discord message `message` replies to, if any."""
    reference = message.get("message_reference") or {}
    return None if reference.get("message_id") is None else str(reference["message_id"])


def write(directory: Path, sections: dict[str, Any]) -> Path:
    """A manifest of the `live` workspace with `sections`."""
    path = directory / f"{WORKSPACE}.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "workspace": WORKSPACE, **sections}))
    return path


@pytest.mark.parametrize("make", [SlackChat, DiscordChat, WebchatChat], ids=lambda c: c.__name__)
def test_a_reply_killed_mid_stream_is_answered_whole_in_its_one_message_after_a_restart(
    tmp_path: Path, make: Callable[[], Chat]
) -> None:
    data, logs = tmp_path / "data", [tmp_path / "first.log", tmp_path / "second.log"]
    script = [
        fake_openai.streamed(*map(fake_openai.text_chunk, FIRST), pause=0.05),
        fake_openai.streamed(*map(fake_openai.text_chunk, WHOLE)),  # asked again at the restart
        fake_openai.streamed(fake_openai.text_chunk(LATER)),
    ]

    async def run(
        chat: Chat, manifest: Path, starts: int, then: Callable[[], Awaitable[None]]
    ) -> None:
        """Start `c2a run`, do `then`, and kill it."""
        process = await start(manifest, data, logs[starts - 1], chat.env)
        try:
            await chat.ready(starts, logs[starts - 1])
            await then()
        finally:
            await ended(process)

    async def scenario() -> tuple[Chat, list[str], int]:
        async with (
            make() as chat,
            fake_openai.FakeOpenAI(script, wait_timeout=120) as model,
        ):
            manifest = chat.manifest(tmp_path, model.base_url)
            asked: list[str] = []

            async def ask_and_wait_for_redraws() -> None:
                asked.append(await chat.ask("write the report"))
                await until(lambda: chat.redraws() >= 2, "two redraws")

            async def ask_later() -> None:
                whole = "".join(WHOLE).strip()
                await until(lambda: chat.replies(asked[0]) == [whole], "the whole answer")
                asked.append(await chat.ask("is the cache warm?"))
                await until(lambda: chat.replies(asked[1]) == [LATER], "the later answer")

            await run(chat, manifest, 1, ask_and_wait_for_redraws)
            await run(chat, manifest, 2, ask_later)
            return chat, asked, len(model.requests)

    chat, (asked, later), asked_model = asyncio.run(scenario())
    (left,) = chat.replies(asked)
    assert left == "".join(WHOLE).strip()
    assert chat.posts() == 2  # one per question, whatever the kill
    assert asked_model == 3  # the killed reply was asked for again, once
    assert sends(data, chat.event_id(asked)) == 1
    assert sends(data, chat.event_id(later)) == 1
    assert finished_as_cut(data) == 1  # shown as cut until the new answer drew over it
    assert "1 answer(s) cut short by a stop, asked again" in logs[1].read_text()
    assert answered(data, chat.event_id(asked)) == "responded"


@pytest.mark.parametrize("make", [SlackChat, DiscordChat, WebchatChat], ids=lambda c: c.__name__)
def test_a_question_killed_before_its_answer_began_is_answered_at_the_restart_not_minutes_later(
    tmp_path: Path, make: Callable[[], Chat]
) -> None:
    """The lead took the question (its harness acknowledged it, the person sees `seen`) and
    was asking the model when the process was killed: nothing was posted. The restart asks
    the model again at once, and the question gets its one answer."""
    data, logs = tmp_path / "data", [tmp_path / "first.log", tmp_path / "second.log"]
    script = [fake_openai.hang(), fake_openai.streamed(fake_openai.text_chunk(LATER))]

    async def scenario() -> tuple[Chat, str, int]:
        async with (
            make() as chat,
            fake_openai.FakeOpenAI(script, wait_timeout=120) as model,
        ):
            manifest = chat.manifest(tmp_path, model.base_url)
            process = await start(manifest, data, logs[0], chat.env)
            try:
                await chat.ready(1, logs[0])
                asked = await chat.ask("is the cache warm?")
                await model.wait_requests(1)  # the turn runs: the harness took it
            finally:
                await ended(process)
            process = await start(manifest, data, logs[1], chat.env)
            try:
                await chat.ready(2, logs[1])
                await until(lambda: chat.replies(asked) == [LATER], "the answer")
            finally:
                await ended(process)
            return chat, asked, len(model.requests)

    chat, asked, asked_model = asyncio.run(scenario())
    assert asked_model == 2
    assert sends(data, chat.event_id(asked)) == 1
    assert answered(data, chat.event_id(asked)) == "responded"
    assert "1 question(s) left unanswered by a stop, asked again" in logs[1].read_text()


def finished_as_cut(data: Path) -> int:
    """How many edits a start made to finish a cut reply."""
    with sqlite3.connect(f"file:{data / f'{WORKSPACE}.sqlite3'}?mode=ro", uri=True) as db:
        (count,) = db.execute(
            "SELECT count(*) FROM outbox WHERE json_extract(action, '$.text') LIKE ?",
            (f"%{CUT_SHORT}",),
        ).fetchone()
    return int(count)


def answered(data: Path, event_id: str) -> str:
    """How the lead ended the message `event_id`."""
    with sqlite3.connect(f"file:{data / f'{WORKSPACE}.sqlite3'}?mode=ro", uri=True) as db:
        (disposition,) = db.execute(
            "SELECT disposition FROM deliveries WHERE event_id = ? AND agent = 'lead'",
            (event_id,),
        ).fetchone()
    return str(disposition)


def sends(data: Path, event_id: str) -> int:
    """How many messages the ledger's outbox holds in answer to the message `event_id`."""
    with sqlite3.connect(f"file:{data / f'{WORKSPACE}.sqlite3'}?mode=ro", uri=True) as db:
        (count,) = db.execute(
            "SELECT count(*) FROM outbox WHERE json_extract(action, '$.action') = 'send'"
            " AND json_extract(action, '$.inReplyTo') = ?",
            (event_id,),
        ).fetchone()
    return int(count)
