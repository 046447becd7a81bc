"""A streamed reply cut by SIGKILL, on Slack and Discord: `c2a run` as a real process (the real
slack-bolt against the fake Slack, the real discord.py against the fake Discord), the lead
on the text reply path against a scripted model that streams slowly. The process is killed
while the reply is being redrawn, then started again on the same data directory and asked
something else.

What a kill leaves (docs/operator.md, "Streamed replies"): the one message the reply had posted,
showing what was written by then and marked as unfinished (`WRITING`); the restart posts no
second copy and does not ask the model again (the question counts as answered from the first
post on), and goes on answering what comes next.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

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

from harness_bridge.streamed_reply import WRITING

FIRST = [f"first{i} " for i in range(400)]  # 20 s of words, a word every 50 ms
LATER = "The cache is warm."
WORKSPACE = "live"  # every platform's manifest names its workspace so: the ledger is live.sqlite3
HARNESS = {"backend": "openai", "model": "fake", "reply": "text"}


class Chat:
    """One platform's fake as the scenario drives it: it is entered around both runs, writes
    the manifest, asks the lead, and tells what its people see."""

    env: dict[str, str] = {}

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


def replied_to(message: Any) -> str | None:
    """The id of the Discord message `message` replies to, if any."""
    reference = message.get("message_reference") or {}
    return None if reference.get("message_id") is None else str(reference["message_id"])


def write(directory: Path, sections: dict[str, Any]) -> Path:
    """A manifest of the `live` workspace with `sections`."""
    path = directory / f"{WORKSPACE}.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "workspace": WORKSPACE, **sections}))
    return path


@pytest.mark.parametrize("make", [SlackChat, DiscordChat], ids=lambda c: c.__name__)
def test_a_reply_killed_mid_stream_stays_one_message_marked_unfinished_after_a_restart(
    tmp_path: Path, make: Callable[[], Chat]
) -> None:
    data, logs = tmp_path / "data", [tmp_path / "first.log", tmp_path / "second.log"]
    script = [
        fake_openai.streamed(*map(fake_openai.text_chunk, FIRST), pause=0.05),
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
                asked.append(await chat.ask("is the cache warm?"))
                await until(lambda: chat.replies(asked[1]) == [LATER], "the later answer")

            await run(chat, manifest, 1, ask_and_wait_for_redraws)
            await run(chat, manifest, 2, ask_later)
            return chat, asked, len(model.requests)

    chat, (asked, later), asked_model = asyncio.run(scenario())
    (left,) = chat.replies(asked)
    assert left.startswith("first0 first1 ")
    assert left.endswith(WRITING)
    assert chat.posts() == 2  # one per question, whatever the kill
    assert asked_model == 2  # the killed reply was not asked for again
    assert sends(data, chat.event_id(asked)) == 1
    assert sends(data, chat.event_id(later)) == 1


def sends(data: Path, event_id: str) -> int:
    """How many messages the ledger's outbox holds in answer to the message `event_id`."""
    with sqlite3.connect(f"file:{data / f'{WORKSPACE}.sqlite3'}?mode=ro", uri=True) as db:
        (count,) = db.execute(
            "SELECT count(*) FROM outbox WHERE json_extract(action, '$.action') = 'send'"
            " AND json_extract(action, '$.inReplyTo') = ?",
            (event_id,),
        ).fetchone()
    return int(count)
