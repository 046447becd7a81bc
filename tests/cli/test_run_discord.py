"""`c2a run` end to end on Discord, in-process: the real discord.py against the fake Discord
(tests/fakes/discord.py), the built-in model loop against a scripted model, the SQLite ledger
on disk. A person mentions the lead's bot in a guild channel; the lead answers exactly once, as
a Discord reply that pings nobody; the run stops cleanly. Then the same for a bot whose
application was not granted the Message Content intent."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import D_HUMAN, D_HUMAN2, D_LEAD, GUILD
from fakes import openai_server as fake_openai
from fakes.discord import MESSAGE_CONTENT, Call, FakeDiscord

import adapters.discord.plugin
from adapters.discord.bots import start_connections
from adapters.discord.clients import ContentMode
from adapters.discord.live import NO_MESSAGE_CONTENT
from c2a.run import WorkspaceRun, run_workspaces
from harness_bridge.runtime import InProcessHarness

CHANNEL = "820000000000000001"
ADMINS = "820000000000000002"
TOKEN = "lead-token-not-a-secret"
ENV = {"DISCORD_LEAD_TOKEN": TOKEN}
LIVE_LOGGER = "adapters.discord.live"
# What the model writes: a stray @everyone and a user mention it was never asked to make.
ANSWER = f"On it. @everyone <@{D_HUMAN2}> look"
# Nothing may ping: no @everyone/@here, no user, no role, not even the author replied to.
PINGS_NOBODY = {"parse": [], "users": [], "roles": [], "replied_user": False}
FINAL = {"sent", "failed"}  # outbox statuses after which an action is never tried again


def write_manifest(directory: Path, fake: FakeDiscord, model_url: str) -> Path:
    manifest = {
        "version": 1,
        "workspace": "live",
        "discord": {
            "guild_id": GUILD,
            "api_url": f"{fake.url}/api/v10",
            "gateway_url": f"{fake.ws_url}/",
        },
        "agents": {
            "lead": {
                "lead": True,
                "discord": {"user_id": D_LEAD, "token_env": "DISCORD_LEAD_TOKEN"},
                "harness": {
                    "backend": "openai",
                    "base_url": model_url,
                    "model": "fake",
                    "quiet_ms": 50,
                },
            }
        },
    }
    path = directory / "live.yaml"
    path.write_text(yaml.safe_dump(manifest))
    return path


@pytest.fixture(autouse=True)
def _quick_guild_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    """discord.py waits `guild_ready_timeout` (2 s) after the last GUILD_CREATE before it is
    ready; the run does not expose it, so its `start_connections` gets a short one here."""
    monkeypatch.setattr(
        adapters.discord.plugin,
        "start_connections",
        functools.partial(start_connections, guild_ready_timeout=0.05),
    )


async def wait_for(predicate: Any, what: str, seconds: float = 10.0) -> None:
    try:
        async with asyncio.timeout(seconds):
            while not predicate():
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


async def settled(run: WorkspaceRun) -> None:
    """Wait until the lead's turn is over and every queued action has its final status: after
    that nothing is left that could send a second time."""
    harness = run.harnesses["lead"]
    assert isinstance(harness, InProcessHarness)
    async with asyncio.timeout(10):
        await harness.idle()
    await wait_for(
        lambda: {s for (s,) in run.store.db.execute("SELECT status FROM outbox")} <= FINAL,
        "every queued action to be sent",
    )


@dataclass
class Outcome:
    event_id: str
    mention_id: str
    calls: list[Call]
    lead_messages: list[dict[str, Any]]
    identify_intents: list[int]
    model_requests: list[dict[str, Any]]
    run: WorkspaceRun


def message_posts(calls: list[Call]) -> list[Call]:
    return [c for c in calls if c.method == "POST" and c.path.endswith("/messages")]


def run_a_mention(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, granted: int, thread: str | None = None
) -> Outcome:
    """Start `c2a run` for the lead's bot, have a person mention it, wait for the answer (in
    `thread` when given), stop."""
    result: list[Outcome] = []

    async def scenario() -> None:
        async with asyncio.timeout(30), FakeDiscord(guild_id=GUILD) as fake:
            # The fake stamps ids and timestamps from a virtual clock starting 2024-05-14, but
            # `c2a run` decides on the system clock: a mention two years old is past its
            # must_respond deadline (reason `expired`). Start the fake's clock at now instead.
            fake._clock_ms = int(time.time() * 1000)
            # The run applies the manifest's api_url/gateway_url process-wide; patching first
            # makes monkeypatch put discord.py's class attributes back after the test.
            fake.patch(monkeypatch)
            fake.granted_intents = granted
            fake.add_bot(TOKEN, D_LEAD, "lead", "910000000000000001")
            fake.add_member(D_HUMAN, "ada.l")
            fake.add_member(D_HUMAN2, "grace.h")
            fake.add_channel(CHANNEL, "general")
            fake.add_channel(ADMINS, "admins")  # the bot is in it, but nothing was asked there

            async with fake_openai.FakeOpenAI([]) as model:
                manifest = write_manifest(tmp_path, fake, model.base_url)
                stop = asyncio.Event()
                runs: list[WorkspaceRun] = []
                task = asyncio.create_task(
                    run_workspaces(
                        [manifest],
                        stop=stop,
                        environ=ENV,
                        data_dir=tmp_path / "data",
                        started=runs.extend,
                    )
                )
                try:
                    await wait_for(lambda: runs or task.done(), "the workspace to start", 20)
                    assert not task.done(), task.exception()

                    message = await fake.user_says(
                        CHANNEL, D_HUMAN, f"<@{D_LEAD}> can you check the deploy?"
                    )
                    # The answer names the mention's id, known only now. The script is extended
                    # without awaiting, well inside the harness's 50 ms quiet time before the
                    # model is first asked (a request past the script would get HTTP 500).
                    event_id = f"discord:{message['id']}"
                    reply = {
                        "target": {"conversation": CHANNEL, "thread": thread},
                        "text": ANSWER,
                        "inReplyTo": event_id,
                    }
                    model.script.extend(
                        [
                            fake_openai.completion(
                                calls=[fake_openai.call("chat_send_message", reply)]
                            ),
                            fake_openai.completion("Done."),
                        ]
                    )

                    await wait_for(lambda: len(model.requests) == 2, "the model's second call")
                    await settled(runs[0])
                finally:
                    stop.set()
                    await asyncio.wait_for(task, 20)

                identifies = [f["d"]["intents"] for f in fake.gateway_received if f["op"] == 2]
                lead_messages = [
                    dict(m) for m in fake.messages.values() if m["author"]["id"] == D_LEAD
                ]
                result.append(
                    Outcome(
                        event_id=event_id,
                        mention_id=str(message["id"]),
                        calls=list(fake.calls),
                        lead_messages=lead_messages,
                        identify_intents=identifies,
                        model_requests=list(model.requests),
                        run=runs[0],
                    )
                )

    asyncio.run(scenario())
    return result[0]


def assert_one_reply_that_pings_nobody(outcome: Outcome) -> None:
    [post] = message_posts(outcome.calls)
    assert post.path == f"/channels/{CHANNEL}/messages"
    assert post.headers.get("Authorization") == f"Bot {TOKEN}"
    body = post.json
    assert body["content"] == ANSWER
    assert str(body["message_reference"]["message_id"]) == outcome.mention_id  # int from discord.py
    assert body["allowed_mentions"] == PINGS_NOBODY
    # Exactly one message by the bot exists on the "server", and it is that reply.
    [message] = outcome.lead_messages
    assert message["content"] == ANSWER


def assert_the_model_was_asked_once_about_the_mention(outcome: Outcome) -> None:
    first, second = outcome.model_requests
    assert "can you check the deploy?" in json.dumps(first)
    assert outcome.event_id in json.dumps(first)
    # The second call carries the tool's result; nothing else was asked.
    assert any(m.get("role") == "tool" for m in second["messages"])


def assert_a_clean_stop(outcome: Outcome, records: list[logging.LogRecord]) -> None:
    run = outcome.run
    assert run.store._db is None  # the ledger is closed on the way out
    [connection] = run.connections["discord"].agents
    assert connection.failure is None
    assert connection.client is not None and connection.client.is_closed()
    assert all(task.done() for task in [*run.harness_tasks.values(), *run._loops])
    assert run.outbox_loop.task is not None and run.outbox_loop.task.done()
    assert any(r.name == "c2a.run" and r.getMessage() == "stopped" for r in records)
    assert not [r for r in records if r.levelno >= logging.ERROR]


def lead_decision(records: list[logging.LogRecord], event_id: str) -> dict[str, Any]:
    [decision] = [
        r.decision
        for r in records
        if r.name == "c2a.decisions"
        and getattr(r, "decision", {}).get("event_id") == event_id
        and r.decision.get("policy")
    ]
    return dict(decision)


def test_a_mention_of_the_leads_bot_gets_exactly_one_reply_that_pings_nobody(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    outcome = run_a_mention(tmp_path, monkeypatch, granted=MESSAGE_CONTENT)

    assert_one_reply_that_pings_nobody(outcome)
    assert_the_model_was_asked_once_about_the_mention(outcome)
    assert {
        "agent": "lead",
        "directedness": "to_me",
        "policy": "must_respond",
        "reason": "direct_mention",
    }.items() <= lead_decision(caplog.records, outcome.event_id).items()
    # One IDENTIFY, with Message Content, and no fallback.
    assert [bool(i & MESSAGE_CONTENT) for i in outcome.identify_intents] == [True]
    assert outcome.run.connections["discord"].agents[0].mode is ContentMode.FULL
    assert not [r for r in caplog.records if r.name == LIVE_LOGGER and r.levelno >= logging.WARNING]
    # The message text never reaches the log.
    assert all("check the deploy" not in r.getMessage() for r in caplog.records)
    assert (tmp_path / "data" / "live.sqlite3").is_file()
    assert_a_clean_stop(outcome, caplog.records)


def test_without_message_content_the_run_says_so_in_one_line_and_still_answers_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    outcome = run_a_mention(tmp_path, monkeypatch, granted=0)

    warnings = [r for r in caplog.records if r.name == LIVE_LOGGER and r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in warnings] == [NO_MESSAGE_CONTENT % "lead"]
    assert "\n" not in warnings[0].getMessage()
    # Refused with 4014, then connected again without the intent: mention-only.
    assert [bool(i & MESSAGE_CONTENT) for i in outcome.identify_intents] == [True, False]
    assert outcome.run.connections["discord"].agents[0].mode is ContentMode.MENTION_ONLY

    assert_one_reply_that_pings_nobody(outcome)
    # A mention carries its text even without the intent, so the model saw the question.
    assert_the_model_was_asked_once_about_the_mention(outcome)
    assert {
        "agent": "lead",
        "directedness": "to_me",
        "policy": "must_respond",
        "reason": "direct_mention",
    }.items() <= lead_decision(caplog.records, outcome.event_id).items()
    assert_a_clean_stop(outcome, caplog.records)


def test_a_reply_naming_another_channel_as_its_thread_is_refused_and_posts_nothing_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A Discord thread is a channel of its own, so a thread id taken on trust would post the
    answer to a question in #general into any channel the bot is in."""
    caplog.set_level(logging.INFO)
    outcome = run_a_mention(tmp_path, monkeypatch, granted=MESSAGE_CONTENT, thread=ADMINS)

    # Only the turn's final text is posted, where the question was asked.
    assert [c.path for c in message_posts(outcome.calls)] == [f"/channels/{CHANNEL}/messages"]
    assert [m["content"] for m in outcome.lead_messages] == ["Done."]
    [result] = [m for m in outcome.model_requests[1]["messages"] if m.get("role") == "tool"]
    assert f"you have seen no thread or message '{ADMINS}' in {CHANNEL}" in result["content"]
    assert_a_clean_stop(outcome, caplog.records)
