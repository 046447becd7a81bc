"""Presses of an approval's buttons reaching `c2a run` over Slack's HTTP interactivity: the real
slack-bolt behind `c2a run`'s own listener, the fake Slack answering the Web API, and each press
a form whose `payload` is the `block_actions` JSON, signed as Slack signs it.

The agent's permission request is scripted (`core.asking.ask`, as a harness's tool asks it) on
the running workspace's engine: the question is posted with buttons through the outbox; a
forged press is refused with a 401 and decides nothing, a non-approver's gets an ephemeral
refusal, the approver's allows, and the message is redrawn to say who decided."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import yaml
from builders import HUMAN, HUMAN2, LEAD, TEAM, slack_body, slack_message
from fakes.slack import FakeSlack, sign
from fakes.slack_interactive import block_actions
from test_run import fresh_ts, wait_for
from test_run_slack_http import BOT_TOKEN, SECRET, post, serving, write_manifest

from core.actions import Choice
from core.approvals import Verdict
from core.asking import Approval, ask

CHOICES = (Choice("yes", "Allow once", True), Choice("no", "Refuse", False))


async def press(port: int, payload: dict[str, Any], secret: str) -> int:
    """POST a press as Slack's interactivity sends it: a signed form with `payload=`."""
    raw = urlencode({"payload": json.dumps(payload)}).encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    headers |= sign(raw, secret, int(time.time()))
    url = f"http://127.0.0.1:{port}/slack/events/lead"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=raw, headers=headers) as response,
    ):
        return response.status


def with_buttons(slack: FakeSlack) -> dict[str, Any] | None:
    for message in slack.messages.get("C0GEN", []):
        if any(b.get("type") == "actions" for b in message.get("blocks") or []):
            return message
    return None


def test_c2a_run_over_http_takes_signed_presses_and_refuses_a_forged_one(tmp_path: Path) -> None:
    asked_ts = fresh_ts()

    async def scenario() -> None:
        async with asyncio.timeout(30), FakeSlack() as slack:
            slack.add_bot(BOT_TOKEN, LEAD, "B0LEAD", team_id=TEAM)
            manifest = write_manifest(tmp_path, slack.api_url)
            data = yaml.safe_load(manifest.read_text())
            data["agents"]["lead"]["approvers"] = [HUMAN]
            manifest.write_text(yaml.safe_dump(data))
            async with serving(manifest, tmp_path) as run:
                port = run.connections["slack"].connections.port  # type: ignore[attr-defined]
                said = slack_message(asked_ts, "<@U0LEAD> clean the build dir?", user=HUMAN)
                assert await post(port, slack_body(said, via="lead"), SECRET) == 200
                approval = Approval(
                    event_id=f"slack:{TEAM}:C0GEN:{asked_ts}",
                    text="lead asks to use shell_exec.",
                    choices=CHOICES,
                )
                asking = asyncio.create_task(ask(run.host.engine, "lead", approval))
                await wait_for(lambda: with_buttons(slack), "the question with buttons")
                message = with_buttons(slack)
                assert message is not None
                (actions,) = [b for b in message["blocks"] if b["type"] == "actions"]
                allow = actions["elements"][0]["action_id"]

                by_ben, by_ana = (
                    block_actions(message, "C0GEN", allow, u) for u in (HUMAN2, HUMAN)
                )
                assert await press(port, by_ben, "someone-elses-secret") == 401  # forged
                assert await press(port, by_ben, SECRET) == 200
                await wait_for(lambda: slack.calls_to("chat.postEphemeral"), "the refusal")
                assert not asking.done()
                assert await press(port, by_ana, SECRET) == 200
                verdict: Verdict = await asyncio.wait_for(asking, 10)
                await wait_for(lambda: with_buttons(slack) is None, "the question redrawn")

            assert verdict.allowed and verdict.by == HUMAN
            (refused,) = [c.params for c in slack.calls_to("chat.postEphemeral")]
            assert refused["user"] == HUMAN2
            assert refused["text"] == "Only lead's approvers can answer this."
            outcome = message["blocks"][-1]["elements"][0]["text"]
            assert outcome.startswith(f"Allow once, by {HUMAN} at ")

    asyncio.run(scenario())
