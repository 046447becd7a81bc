"""`c2a run` serving Slack's HTTP Events API for a workspace whose manifest says `mode: http`:
the real slack-bolt behind `c2a run`'s own listener, the fake Slack answering the Web API, and
requests signed as Slack signs them. A valid signature is taken (in the ledger before the 200),
a forged one is refused with a 401 and nothing stored."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from builders import HUMAN, LEAD, TEAM, slack_body, slack_message
from fakes.slack import FakeSlack, sign
from test_run import fresh_ts, wait_for

from c2a.run import WorkspaceRun, run_workspaces

BOT_TOKEN = "xoxb-lead-http"
SECRET = "not-a-real-signing-secret"
ENV = {"SLACK_LEAD_BOT_TOKEN": BOT_TOKEN, "SLACK_LEAD_SIGNING_SECRET": SECRET}


def write_manifest(directory: Path, api_url: str, **changes: Any) -> Path:
    manifest = {
        "version": 1,
        "workspace": "overhttp",
        "slack": {
            "team_id": TEAM,
            "api_url": api_url,
            "mode": "http",
            "listen": {"host": "127.0.0.1", "port": 0},
        },
        "agents": {
            "lead": {
                "lead": True,
                "slack": {
                    "user_id": LEAD,
                    "bot_token_env": "SLACK_LEAD_BOT_TOKEN",
                    "signing_secret_env": "SLACK_LEAD_SIGNING_SECRET",
                },
            }
        },
        "channels": {"C0GEN": {}},
        **changes,
    }
    path = directory / "overhttp.yaml"
    path.write_text(yaml.safe_dump(manifest))
    return path


async def post(port: int, body: dict[str, Any], secret: str) -> int:
    raw = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **sign(raw, secret, int(time.time()))}
    url = f"http://127.0.0.1:{port}/slack/events/lead"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=raw, headers=headers) as response,
    ):
        return response.status


@contextlib.asynccontextmanager
async def serving(manifest: Path, data: Path) -> AsyncIterator[WorkspaceRun]:
    """`c2a run` of `manifest` (its ledger in `data`), started, then stopped at the end."""
    stop = asyncio.Event()
    runs: list[WorkspaceRun] = []
    task = asyncio.create_task(
        run_workspaces([manifest], stop=stop, environ=ENV, data_dir=data, started=runs.extend)
    )
    await wait_for(lambda: runs, "the workspace to start")
    try:
        yield runs[0]
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)


def stored_events(data: Path) -> list[str]:
    with sqlite3.connect(data / "overhttp.sqlite3") as db:
        return [row[0] for row in db.execute("SELECT id FROM events ORDER BY seq")]


def test_c2a_run_takes_a_signed_event_over_http_and_refuses_a_forged_one(tmp_path: Path) -> None:
    taken, forged = fresh_ts(), fresh_ts()
    data = tmp_path / "data"

    async def scenario() -> tuple[int, int, list[str], list[str]]:
        async with asyncio.timeout(30), FakeSlack() as slack:
            slack.add_bot(BOT_TOKEN, LEAD, "B0LEAD", team_id=TEAM)
            manifest = write_manifest(tmp_path, slack.api_url)
            async with serving(manifest, data) as run:
                port = run.connections["slack"].connections.port  # type: ignore[attr-defined]
                said = slack_message(taken, "<@U0LEAD> deploy?", user=HUMAN)
                good_status = await post(port, slack_body(said, via="lead"), SECRET)
                in_ledger_at_200 = stored_events(data)  # durable before the answer
                said = slack_message(forged, "<@U0LEAD> forged", user=HUMAN)
                bad_status = await post(port, slack_body(said, via="lead"), "someone-elses-secret")
            assert slack.acks == []  # no Socket Mode: nothing was opened
            assert not slack.calls_to("apps.connections.open")
            return good_status, bad_status, in_ledger_at_200, stored_events(data)

    good_status, bad_status, at_200, at_end = asyncio.run(scenario())
    assert (good_status, bad_status) == (200, 401)
    assert at_200 == [f"slack:{TEAM}:C0GEN:{taken}"]
    assert at_end == at_200, "the forged event was not stored"


def test_a_person_past_the_turn_budget_is_told_by_an_ephemeral_message(tmp_path: Path) -> None:
    """The notice of `core.budget_notice` through slack-sdk: `chat.postEphemeral` to the asker
    alone, where they asked, and queued once for the two messages past the budget."""
    data = tmp_path / "data"

    async def scenario() -> list[dict[str, Any]]:
        async with asyncio.timeout(30), FakeSlack() as slack:
            slack.add_bot(BOT_TOKEN, LEAD, "B0LEAD", team_id=TEAM)
            budget = {"turns": 1, "window_s": 3600}
            manifest = write_manifest(tmp_path, slack.api_url, budget=budget)
            async with serving(manifest, data) as run:
                port = run.connections["slack"].connections.port  # type: ignore[attr-defined]
                for n in range(3):
                    said = slack_message(fresh_ts(), f"<@{LEAD}> deploy {n}?", user=HUMAN)
                    assert await post(port, slack_body(said, via="lead"), SECRET) == 200
                await wait_for(lambda: slack.calls_to("chat.postEphemeral"), "the notice")
            return [call.params for call in slack.calls_to("chat.postEphemeral")]

    (notice,) = asyncio.run(scenario())
    assert (notice["channel"], notice["user"]) == ("C0GEN", HUMAN)
    assert "so I can answer you again at" in notice["text"]
    with sqlite3.connect(data / "overhttp.sqlite3") as db:
        keys = [row[0] for row in db.execute("SELECT idempotency_key FROM outbox")]
    assert len([key for key in keys if ":budget:" in key]) == 1
