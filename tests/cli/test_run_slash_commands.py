"""`/c2a` through `c2a run` on Slack, in Socket Mode and in HTTP mode: the real slack-bolt
takes the command (a `slash_commands` envelope, or a signed form post), and the answer reaches
the person alone at the command's `response_url`. `status` and `why` read the run's ledger; a
forged command is refused with a 401."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import HUMAN, LEAD, TEAM, slack_body, slack_join, slack_message
from fakes.slack import FakeSlack
from fakes.slack_commands import Responses, form_post, run_over_socket, slash_command
from test_run import fresh_ts, wait_for
from test_run_slack_http import BOT_TOKEN, ENV, SECRET, post
from test_run_slack_http import write_manifest as http_manifest

from c2a.run import WorkspaceRun, run_workspaces

APP_TOKEN = "xapp-1-lead-cmd"
BOTH = {**ENV, "SLACK_LEAD_APP_TOKEN": APP_TOKEN}


def write_manifest(directory: Path, api_url: str, mode: str) -> Path:
    """The HTTP-mode workspace of `test_run_slack_http`, in Socket Mode when `mode` says so."""
    path = http_manifest(directory, api_url)
    data = yaml.safe_load(path.read_text())
    data["slack"]["mode"] = mode
    data["agents"]["lead"]["slack"]["app_token_env"] = "SLACK_LEAD_APP_TOKEN"
    path.write_text(yaml.safe_dump(data))
    return path


@asynccontextmanager
async def running(manifest: Path, data: Path) -> AsyncIterator[WorkspaceRun]:
    """`c2a run` on `manifest` until the block ends."""
    stop, runs = asyncio.Event(), list[WorkspaceRun]()
    started = run_workspaces(
        [manifest], stop=stop, environ=BOTH, data_dir=data, started=runs.extend
    )
    task = asyncio.create_task(started)
    await wait_for(lambda: runs, "the workspace to start")
    try:
        yield runs[0]
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)


class Over:
    """Slack as the run meets it in one mode: events in, commands in, answers out."""

    def __init__(self, mode: str, slack: FakeSlack, responses: Responses, run: WorkspaceRun):
        self.mode, self.slack, self.responses = mode, slack, responses
        self.port = run.connections["slack"].connections.port  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.port}/slack/events/lead"

    async def event(self, body: dict[str, Any]) -> None:
        if self.mode == "socket":
            await self.slack.send_event(body, app_token=APP_TOKEN)
        else:
            assert await post(self.port, body, SECRET) == 200

    async def command(self, text: str) -> dict[str, Any]:
        if self.mode == "socket":
            return await run_over_socket(
                self.slack, text, user=HUMAN, responses=self.responses, app_token=APP_TOKEN
            )
        url = self.responses.url()
        command = slash_command(text, user=HUMAN, response_url=url)
        assert await form_post(self.url, command, SECRET) == 200
        return await self.responses.answer(url)


@pytest.mark.parametrize("mode", ["socket", "http"])
def test_status_and_why_answer_ephemerally_through_c2a_run(tmp_path: Path, mode: str) -> None:
    ts = fresh_ts()
    link = f"https://fake.slack.com/archives/C0GEN/p{ts.replace('.', '')}"

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], int | None]:
        async with asyncio.timeout(30), FakeSlack() as slack, Responses() as responses:
            slack.add_bot(BOT_TOKEN, LEAD, "B0LEAD", team_id=TEAM)
            slack.members["C0GEN"] = [LEAD, HUMAN]  # who may read the channel's words
            manifest = write_manifest(tmp_path, slack.api_url, mode)
            async with running(manifest, tmp_path / "data") as run:
                if mode == "socket":
                    await slack.wait_connected(1)
                over = Over(mode, slack, responses, run)
                await over.event(slack_body(slack_join(LEAD), via="lead"))
                mention = slack_message(ts, "<@U0LEAD> is the deploy done?", user=HUMAN)
                await over.event(slack_body(mention, via="lead"))
                status = await over.command("status")
                why = await over.command(f"why {link}")
                forged = None
                if mode == "http":
                    command = slash_command("status", user=HUMAN, response_url=responses.url())
                    forged = await form_post(over.url, command, "someone-elses-secret")
            return status, why, forged

    status, why, forged = asyncio.run(scenario())
    assert status["response_type"] == why["response_type"] == "ephemeral"
    assert status["text"].startswith("*lead*: 1 open, ")
    assert "  • in C0GEN: <@U0LEAD> is the deploy done?" in status["text"]
    assert why["text"].splitlines() == [
        "Message: <@U0LEAD> is the deploy done?",
        "  *lead*: must_respond (`direct_mention`), buffered, pending",
    ]
    assert forged == (401 if mode == "http" else None)
