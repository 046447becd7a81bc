"""A streamed reply cut by SIGKILL: `c2a run` as a real process, the real slack-bolt against the
fake Slack, the lead on the text reply path against a scripted model that streams slowly. The
process is killed while the reply is being redrawn, then started again on the same data
directory and asked something else.

What a kill leaves (docs/slack.md): the one message the reply had posted, showing what was
written by then and marked as unfinished (`WRITING`); the restart posts no second copy and does
not ask the model again (the question counts as answered from the first post on), and goes on
answering what comes next."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

from builders import HUMAN, LEAD, TEAM, slack_body, slack_join, slack_message
from fakes import openai_server as fake_openai
from fakes.slack import FakeSlack
from test_run import APP_TOKEN, BOT_TOKEN, ENV, write_manifest
from test_run_sigterm import ended, start, until

from harness_bridge.streamed_reply import WRITING

FIRST = [f"first{i} " for i in range(400)]  # 20 s of words, a word every 50 ms
LATER = "The cache is warm."


def test_a_reply_killed_mid_stream_stays_one_message_marked_unfinished_after_a_restart(
    tmp_path: Path,
) -> None:
    asked, later = f"{time.time():.6f}", f"{time.time() + 1:.6f}"
    data, logs = tmp_path / "data", [tmp_path / "first.log", tmp_path / "second.log"]
    script = [
        fake_openai.streamed(*map(fake_openai.text_chunk, FIRST), pause=0.05),
        fake_openai.streamed(fake_openai.text_chunk(LATER)),
    ]

    async def scenario() -> tuple[FakeSlack, int]:
        async with (
            FakeSlack(wait_timeout=120) as slack,
            fake_openai.FakeOpenAI(script, wait_timeout=120) as model,
        ):
            slack.add_bot(BOT_TOKEN, LEAD, "B0LEAD", team_id=TEAM)
            harness = {"backend": "openai", "base_url": model.base_url, "model": "fake"}
            manifest = write_manifest(
                tmp_path, api_url=slack.api_url, model_url="", harness={**harness, "reply": "text"}
            )

            async def mention(ts: str, text: str) -> None:
                body = slack_body(slack_message(ts, f"<@{LEAD}> {text}", user=HUMAN), via="lead")
                await slack.send_event(body, app_token=APP_TOKEN)

            first = await start(manifest, data, logs[0], ENV)
            try:
                await slack.wait_connected(1)
                await slack.send_event(
                    slack_body(slack_join(LEAD), via="lead"), app_token=APP_TOKEN
                )
                await mention(asked, "write the report")
                await until(lambda: len(slack.calls_to("chat.update")) >= 2, "two redraws")
                first.kill()
                await first.wait()
            finally:
                await ended(first)
            second = await start(manifest, data, logs[1], ENV)
            try:
                await slack.wait_connected(2)
                await mention(later, "is the cache warm?")
                await until(lambda: replies(slack, later) == [LATER], "the later answer")
            finally:
                second.kill()
                await ended(second)
            return slack, len(model.requests)

    slack, asked_model = asyncio.run(scenario())
    (left,) = replies(slack, asked)
    assert left.startswith("first0 first1 ") and left.endswith(WRITING)
    assert len(slack.calls_to("chat.postMessage")) == 2  # one per question, whatever the kill
    assert asked_model == 2  # the killed reply was not asked for again
    assert sends(data, asked) == 1


def replies(slack: FakeSlack, thread: str) -> list[str]:
    """The lead's messages in the thread of `thread`, as Slack holds them now."""
    said: list[dict[str, Any]] = slack.messages.get("C0GEN", [])
    return [str(m["text"]) for m in said if m.get("user") == LEAD and m.get("thread_ts") == thread]


def sends(data: Path, ts: str) -> int:
    """How many messages the ledger's outbox holds in answer to the message at `ts`."""
    with sqlite3.connect(f"file:{data / 'live.sqlite3'}?mode=ro", uri=True) as db:
        (count,) = db.execute(
            "SELECT count(*) FROM outbox WHERE json_extract(action, '$.action') = 'send'"
            " AND json_extract(action, '$.inReplyTo') = ?",
            (f"slack:{TEAM}:C0GEN:{ts}",),
        ).fetchone()
    return int(count)
