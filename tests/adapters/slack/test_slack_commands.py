"""`/c2a` on Slack at the listener: the real slack-bolt over Socket Mode against the fake
Slack, answering at the command's `response_url`; mute, unmute and leave only for the agent's
approvers (a `group:` approver looked up with usergroups.users.list), leave cancelling the
agent's turn; Slack's message links read; a private channel's words and decisions shown to its
members alone (conversations.members); and in HTTP mode a signed form that is no slash command
refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from builders import HUMAN, HUMAN2, W1, local_workspace, slack_body, slack_join, slack_message
from fakes.slack import FakeSlack
from fakes.slack_commands import Responses, form_post, run_over_socket
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import normalise
from adapters.slack.commands import listen_for_commands, message_link
from adapters.slack.directory import SlackDirectory
from adapters.slack.live import SlackAgentConnection, SlackWorkspaceConnections
from core.clock import VirtualClock, parse_time
from core.command_answers import Commands
from core.emission import Cancel, Emission
from core.engine import Engine
from core.sqlite_store import SQLiteStore

APP_TOKEN = "xapp-1-test"


async def receive(platform: str, payload: Mapping[str, Any], via: str | None) -> None:
    return None


class Live:
    def __init__(self, slack: FakeSlack, responses: Responses, engine: Engine) -> None:
        self.slack, self.responses, self.engine = slack, responses, engine
        self.told: list[Emission] = []

    async def sink(self, emissions: list[Emission]) -> None:
        self.told.extend(emissions)

    async def run(self, text: str, user: str = HUMAN) -> str:
        answer = await run_over_socket(self.slack, text, user=user, responses=self.responses)
        assert answer["response_type"] == "ephemeral"
        return str(answer["text"])


@asynccontextmanager
async def live(tmp_path: Path) -> AsyncIterator[Live]:
    store = SQLiteStore(str(tmp_path / "ledger.sqlite3"))
    await store.open()
    clock = VirtualClock(parse_time("2026-01-01T00:00:00Z"))
    engine = Engine(local_workspace(), store, clock)
    engine.approvals.approvers["worker-1"] = (HUMAN, "group:S0OPS")
    try:
        async with asyncio.timeout(20), FakeSlack() as slack, Responses() as responses:
            found = Live(slack, responses, engine)
            connection = SlackAgentConnection(
                "lead", receive, bot_token="xoxb-test", app_token=APP_TOKEN, api_url=slack.api_url
            )
            client = AsyncWebClient(token="xoxb-test", base_url=slack.api_url)
            directory = SlackDirectory(engine.workspace, client, clock=clock)
            commands = Commands(engine, found.sink)
            listen_for_commands(connection.app, commands, members=directory.members)
            await connection.start()
            try:
                await slack.wait_connected(1)
                yield found
            finally:
                await connection.close()
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("link", "found"),
    [
        ("https://t.slack.com/archives/C0GEN/p1767225600000100", ("C0GEN", "1767225600.000100")),
        (
            "https://t.slack.com/archives/C0GEN/p1767225601000200?thread_ts=1767225600.000100&cid=C0GEN",
            ("C0GEN", "1767225601.000200"),
        ),
        ("https://t.slack.com/archives/C0GEN", None),
        ("https://t.slack.com/archives/C0GEN/p17672256000001000", None),
        ("not a link", None),
    ],
)
def test_a_slack_message_link_names_its_channel_and_ts(
    link: str, found: tuple[str, str] | None
) -> None:
    assert message_link(link) == found


def test_mute_is_for_the_agent_s_approvers_a_group_looked_up_in_slack(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with live(tmp_path) as w:
            w.slack.usergroups["S0OPS"] = []
            assert (
                await w.run("mute worker-1 2h", HUMAN2) == "Only worker-1's approvers can do that."
            )
            assert not w.engine.state.muted
            w.slack.usergroups["S0OPS"] = [HUMAN2]
            muted = await w.run("mute worker-1 2h", HUMAN2)
            assert muted == "worker-1 is muted until 2026-01-01T02:00:00Z: it gets no new turns."
            lookups = w.slack.calls_to("usergroups.users.list")
            assert [c.params["usergroup"] for c in lookups] == ["S0OPS", "S0OPS"]
            assert await w.run("unmute worker-1") == "worker-1 is unmuted: it gets turns again."
            assert not w.engine.state.muted
            assert len(w.slack.calls_to("usergroups.users.list")) == 3  # not for status
            await w.run("status")
            assert len(w.slack.calls_to("usergroups.users.list")) == 3

    asyncio.run(scenario())


def test_leave_stops_the_agent_s_turn_and_claims_and_help_answer_anyone(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with live(tmp_path) as w:
            event = normalise(
                slack_body(
                    slack_message(
                        "1767225600.000100", f"<@{W1}> go", channel="D0W1", channel_type="im"
                    ),
                    via="worker-1",
                )
            )
            assert event is not None
            async with w.engine.store.transaction():
                await w.engine.ingest(event, "worker-1")
            assert await w.run("leave worker-1", HUMAN2) == "Only worker-1's approvers can do that."
            assert w.told == []
            assert await w.run("leave worker-1") == "Stopped worker-1's turn on 1 message."
            assert w.told == [Cancel("worker-1", event.event_id, "left_conversation")]
            assert await w.run("claims", HUMAN2) == "No open claims."
            assert (await w.run("help", HUMAN2)).startswith("`/c2a status`")
            assert (await w.run("what", HUMAN2)).startswith("No command 'what'.")

    asyncio.run(scenario())


def test_a_private_channel_s_words_and_decisions_are_for_its_members_alone(
    tmp_path: Path,
) -> None:
    """A link or an id is no proof of access: someone not in the channel is told so by `why`,
    and `status` and `claims` name neither the channel nor what was said in it."""

    async def scenario() -> None:
        async with live(tmp_path) as w:
            w.slack.add_bot("xoxb-test", "U0LEAD", "B0LEAD")
            w.slack.members["G0SECRET"] = [HUMAN, "U0LEAD", W1]
            ts = "1767225600.000100"
            said = f"<@{W1}> the merger closes friday, check the numbers"
            secret = slack_message(ts, said, channel="G0SECRET", channel_type="group")
            event = normalise(slack_body(secret))
            assert event is not None
            joined = normalise(slack_body(slack_join(W1, "G0SECRET")))
            assert joined is not None
            async with w.engine.store.transaction():
                await w.engine.ingest(joined)
                await w.engine.ingest(event)
                await w.engine.claim("worker-1", event.event_id)
            link = f"https://t.slack.com/archives/G0SECRET/p{ts.replace('.', '')}"
            outside = [await w.run(f"why {link}", HUMAN2)]
            outside += [await w.run("status", HUMAN2), await w.run("claims", HUMAN2)]
            assert outside[0] == (
                "That message is in a conversation you are not in: only its members can ask why."
            )
            assert (
                "  • in a conversation you are not in: (its words are for its members)"
                in (outside[1])
            )
            for answer in outside:
                assert "merger" not in answer and "G0SECRET" not in answer, answer
            assert (await w.run(f"why {link}")).startswith(f"Message: {said}")
            assert f"in G0SECRET: {said[:20]}" in await w.run("status")
            assert "merger" in await w.run("claims")
            asked = [c.params["channel"] for c in w.slack.calls_to("conversations.members")]
            assert asked == ["G0SECRET"]  # once, then from the directory's cache

    asyncio.run(scenario())


def test_a_signed_form_that_is_no_slash_command_is_refused(tmp_path: Path) -> None:
    async def scenario() -> tuple[int, int]:
        secret = "not-a-real-signing-secret"
        connection = SlackAgentConnection(
            "lead", receive, bot_token="xoxb-test", signing_secret=secret, mode="http"
        )
        async with SlackWorkspaceConnections([connection], port=0) as served:
            url = f"http://127.0.0.1:{served.port}/slack/events/lead"
            no_command = await form_post(url, {"user_id": HUMAN, "text": "status"}, secret)
            forged = await form_post(url, {"command": "/c2a", "user_id": HUMAN}, "other")
        return no_command, forged

    assert asyncio.run(scenario()) == (400, 401)
