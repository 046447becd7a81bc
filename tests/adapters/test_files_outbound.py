"""An agent's files reach Slack and Discord, and a long answer arrives there as `answer.md`
with a summary: from the agent's tool call through the agent port and the outbox to the fake
platforms, with the real slack-sdk (`files_upload_v2`) and discord.py clients. A retry, after
a lost answer or a crash, never shares the files twice."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from builders import TEAM, local_workspace, slack_body, slack_message
from fakes.slack import FakeSlack

from adapters.slack import normalise as slack_normalise
from adapters.slack.plugin import DRAFT_LIMIT as SLACK_LIMIT
from adapters.slack.send import SlackSender
from core.action_records import from_record
from core.actions import Post
from core.clock import VirtualClock, parse_time
from core.emission import Delivery
from core.engine import Engine
from core.engine_port import EnginePort
from core.outbox import Outbox
from core.post_files import ATTACHED_NOTE
from core.sqlite_store import SQLiteStore
from harness_bridge.tools import ChatTools

TOKEN = "xoxb-lead-test"
ENV = {
    "SLACK_LEAD_BOT_TOKEN": TOKEN,
    "SLACK_W1_BOT_TOKEN": "xoxb-w1-test",
    "SLACK_W2_BOT_TOKEN": "xoxb-w2-test",
}
LONG = "The deploy failed on the migration step.\n\n" + "".join(
    f"Line {n}: the step that ran, what it printed and why it matters.\n" for n in range(480)
)


@dataclass
class SlackRig:
    slack: FakeSlack
    engine: Engine
    store: SQLiteStore
    tools: ChatTools
    told: Delivery
    workspace: Any
    senders: list[SlackSender] = field(default_factory=list)

    def sender(self) -> SlackSender:
        """A new sender, as a new process would make; closed with the rig."""
        self.senders.append(SlackSender(self.workspace, ENV, clock=self.engine.clock))
        return self.senders[-1]

    async def drain(self, key: str) -> str:
        """Drain the outbox once; the status the action under `key` is left in."""
        await Outbox(self.store, self.engine.clock, {"slack": self.sender()}).drain()
        entry = await self.store.outbox_get(key)
        assert entry is not None
        return entry.status

    async def sent_post(self, key: str) -> Post:
        entry = await self.store.outbox_get(key)
        assert entry is not None
        post = from_record(entry.action)
        assert isinstance(post, Post)
        return post


@asynccontextmanager
async def slack_rig() -> AsyncIterator[SlackRig]:
    async with FakeSlack() as slack:
        slack.add_bot(TOKEN, "U0LEAD", "B0LEAD", TEAM)
        workspace = local_workspace(slack={"team_id": TEAM, "api_url": slack.api_url})
        store = SQLiteStore()
        await store.open()
        engine = Engine(workspace, store, VirtualClock(parse_time("2026-01-01T00:00:10Z")))
        event = slack_normalise(
            slack_body(
                slack_message(
                    "1767225599.000100", "why did it fail?", channel="D0LEAD", channel_type="im"
                ),
                via="lead",
            )
        )
        assert event is not None
        async with store.transaction():
            outcome = await engine.ingest(event, "lead")
        (told,) = [
            e for e in outcome.emissions if isinstance(e, Delivery) and e.decision.agent == "lead"
        ]
        tools = ChatTools(EnginePort(engine, "lead", limits={"slack": SLACK_LIMIT}))
        rig = SlackRig(slack, engine, store, tools, told, workspace)
        try:
            yield rig
        finally:
            for sender in rig.senders:
                await sender.close()
            await store.close()


def on_slack(test: Callable[[SlackRig], Awaitable[None]]) -> None:
    async def go() -> None:
        async with asyncio.timeout(20), slack_rig() as rig:
            await test(rig)

    asyncio.run(go())


def send_with_file(rig: SlackRig) -> dict[str, Any]:
    target = {"conversation": "D0LEAD"}
    files = [{"name": "../tmp/deploy.log", "content": "step 3: exit 1\n"}]
    return {
        "target": target,
        "text": "Here is the log.",
        "inReplyTo": rig.told.decision.event_id,
        "files": files,
    }


def test_an_agent_s_file_is_shared_on_slack_with_its_message_as_the_comment() -> None:
    async def test(rig: SlackRig) -> None:
        sent = await rig.tools.call("chat_send_message", send_with_file(rig))
        assert await rig.drain(sent["idempotencyKey"]) == "sent"
        (shared,) = rig.slack.uploads.shared()
        assert (shared.name, shared.text) == ("deploy.log", "step 3: exit 1\n")
        ((channel, ts),) = shared.shared_in
        (message,) = [m for m in rig.slack.messages[channel] if m.get("upload")]
        assert message["text"] == "Here is the log."
        assert rig.slack.calls_to("chat.postMessage") == []
        (complete,) = rig.slack.calls_to("files.completeUploadExternal")
        assert complete.params["channel_id"] == "D0LEAD" and complete.token == TOKEN
        entry = await rig.store.outbox_get(sent["idempotencyKey"])
        assert entry is not None and entry.result is not None
        assert entry.result["messageId"] == ts
        again = await rig.tools.call("chat_send_message", send_with_file(rig))
        assert again["status"] == "duplicate"
        assert len(rig.slack.uploads.posts) == 1

    on_slack(test)


def test_after_a_crash_the_shared_files_are_found_and_never_uploaded_again() -> None:
    async def test(rig: SlackRig) -> None:
        sent = await rig.tools.call("chat_send_message", send_with_file(rig))
        post = await rig.sent_post(sent["idempotencyKey"])
        landed = await rig.sender().send(post)  # shared, then the process died
        found = await rig.sender().find(post)  # a new process looks first
        assert found is not None and found["messageId"] == landed["messageId"]
        assert len(rig.slack.uploads.posts) == 1

    on_slack(test)


def test_a_completion_that_may_have_failed_is_looked_for_then_shared_once() -> None:
    async def test(rig: SlackRig) -> None:
        rig.slack.fail_next("files.completeUploadExternal", status=500)
        key = (await rig.tools.call("chat_send_message", send_with_file(rig)))["idempotencyKey"]
        assert await rig.drain(key) == "ambiguous"  # it may have posted
        assert await rig.drain(key) == "sent"  # not found in the history, so shared now
        assert len(rig.slack.uploads.shared()) == 1
        assert len(rig.slack.calls_to("conversations.history")) == 1

    on_slack(test)


def test_a_30000_character_answer_arrives_on_slack_as_a_file_and_a_summary() -> None:
    async def test(rig: SlackRig) -> None:
        assert len(LONG) > 30_000
        sent = await rig.tools.reply_with_text([rig.told.decision.event_id], LONG)
        assert sent is not None and await rig.drain(sent["idempotencyKey"]) == "sent"
        (shared,) = rig.slack.uploads.shared()
        assert (shared.name, shared.text) == ("answer.md", LONG.strip())
        (message,) = [m for m in rig.slack.messages["D0LEAD"] if m.get("upload")]
        assert message["text"] == f"The deploy failed on the migration step.\n\n{ATTACHED_NOTE}"
        assert rig.slack.calls_to("chat.postMessage") == []

    on_slack(test)
