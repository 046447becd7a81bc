"""The outbound Slack side: the real slack-sdk against a fake Slack on 127.0.0.1, through the
core outbox where reliability is the point. Nothing is posted twice; nothing pings by accident."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from builders import HUMAN, LEAD, TEAM, W1, W2, local_workspace
from fakes.slack import FakeSlack

from adapters.slack import indicators
from adapters.slack.pacing import ChannelPacer
from adapters.slack.posts import METADATA_EVENT_TYPE
from adapters.slack.scopes import scope_problem
from adapters.slack.send import SlackSender
from adapters.slack.webapi import verify
from core.action_records import to_record
from core.actions import Action, Delete, Edit, Post, React, Unreact, Working
from core.clock import VirtualClock, parse_time
from core.errors import (
    ManifestError,
    PermanentSendError,
    SendOutcomeUnknown,
    TransientSendError,
)
from core.events import Author, ChatEvent, Conversation, ConversationKind, EventKind
from core.manifest import Workspace
from core.outbox import Outbox
from core.signals import Signal, superseded_by
from core.sqlite_store import SQLiteStore

AT = "2026-01-01T00:00:00Z"
TOKENS = {"lead": "xoxb-lead-test", "worker-1": "xoxb-w1-test", "worker-2": "xoxb-w2-test"}
ENV = {
    "SLACK_LEAD_BOT_TOKEN": TOKENS["lead"],
    "SLACK_W1_BOT_TOKEN": TOKENS["worker-1"],
    "SLACK_W2_BOT_TOKEN": TOKENS["worker-2"],
}
USERS = {"lead": LEAD, "worker-1": W1, "worker-2": W2}


class FakeTime:
    """A monotonic clock that moves only when slept on; remembers every sleep."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@dataclass
class Rig:
    slack: FakeSlack
    workspace: Workspace
    time: FakeTime
    events: dict[str, ChatEvent] = field(default_factory=dict)
    senders: list[SlackSender] = field(default_factory=list)

    def sender(self, **options: Any) -> SlackSender:
        async def lookup(event_id: str) -> ChatEvent | None:
            return self.events.get(event_id)

        sender = SlackSender(
            self.workspace,
            ENV,
            lookup=lookup,
            clock=VirtualClock(parse_time(AT)),
            pacer=ChannelPacer(monotonic=self.time.monotonic, sleep=self.time.sleep),
            sleep=self.time.sleep,
            **options,
        )
        self.senders.append(sender)  # closed when the test ends
        return sender

    def said(self, channel: str) -> list[dict[str, Any]]:
        """What the agents posted in a channel, oldest first."""
        return [m for m in self.slack.messages.get(channel, []) if "bot_id" in m]

    def human_says(self, channel: str, text: str, *, thread_ts: str | None = None) -> ChatEvent:
        ts = self.slack.add_message(channel, text, user=HUMAN, thread_ts=thread_ts)
        kind = ConversationKind.DM if channel.startswith("D") else ConversationKind.CHANNEL
        event = ChatEvent(
            event_id=f"slack:{TEAM}:{channel}:{ts}",
            kind=EventKind.MESSAGE,
            platform="slack",
            workspace_id=TEAM,
            conversation=Conversation(channel, kind, thread_id=thread_ts),
            author=Author(HUMAN),
            created_at=parse_time(AT),
            message_id=ts,
            text=text,
        )
        self.events[event.event_id] = event
        return event


@asynccontextmanager
async def rigged(**manifest: Any) -> AsyncIterator[Rig]:
    async with FakeSlack() as slack:
        for agent, token in TOKENS.items():
            slack.add_bot(token, USERS[agent], f"B{USERS[agent][1:]}", TEAM)
        slack_config = {"team_id": TEAM, "api_url": slack.api_url}
        rig = Rig(slack, local_workspace(slack=slack_config, **manifest), FakeTime())
        try:
            yield rig
        finally:
            for sender in rig.senders:
                await sender.close()


def run(test: Callable[[Rig], Awaitable[None]], **manifest: Any) -> None:
    async def go() -> None:
        async with asyncio.timeout(20), rigged(**manifest) as rig:
            await test(rig)

    asyncio.run(go())


def message(event: ChatEvent | None = None, **changes: Any) -> Post:
    action = Post(
        agent="worker-1",
        platform="slack",
        conversation="C0GEN",
        key=f"{event.event_id if event else 'C0GEN'}:worker-1:send:1",
        text="on it",
        in_reply_to=event.event_id if event else None,
    )
    return replace(action, **changes)


def react(event: ChatEvent, signal: str, agent: str = "worker-1") -> React:
    assert event.message_id is not None
    return React(
        agent=agent,
        platform="slack",
        conversation=event.conversation.id,
        key=f"{event.event_id}:{agent}:react:{signal}",
        message_id=event.message_id,
        signal=Signal(signal),
        event_id=event.event_id,
    )


@asynccontextmanager
async def outbox_for(
    sender: SlackSender, *actions: Action | dict[str, Any]
) -> AsyncIterator[Outbox]:
    """An outbox holding `actions` (typed, or records as the store holds them)."""
    store = SQLiteStore()
    await store.open()
    try:
        async with store.transaction():
            for action in actions:
                record = action if isinstance(action, dict) else to_record(action)
                key = record.get("idempotencyKey") or "unkeyed"
                await store.put_outbox(key, "worker-1", record, AT)
        yield Outbox(store, VirtualClock(parse_time(AT)), {"slack": sender})
    finally:
        await store.close()


def outbox_rows(outbox: Outbox) -> list[tuple[str, str]]:
    db = outbox.store.db  # type: ignore[attr-defined]
    return [(str(s), str(r)) for s, r in db.execute("SELECT status, result FROM outbox ORDER BY n")]


# ---- messages ---------------------------------------------------------------------------------


def test_a_threaded_reply_lands_in_the_thread_with_its_key_in_metadata() -> None:
    async def test(rig: Rig) -> None:
        root = rig.human_says("C0GEN", "deploy?")
        asked = rig.human_says("C0GEN", "<@U0W1> can you check", thread_ts=root.message_id)
        action = message(asked, thread=root.message_id)
        result = await rig.sender().send(action)
        [posted] = rig.said("C0GEN")
        assert posted["thread_ts"] == root.message_id and posted["user"] == W1
        assert posted["text"] == "on it"
        assert posted["metadata"] == {
            "event_type": METADATA_EVENT_TYPE,
            "event_payload": {"idempotency_key": action.key, "part": 0, "parts": 1},
        }
        assert result["messageId"] == posted["ts"] and result["thread"] == root.message_id
        [call] = rig.slack.calls_to("chat.postMessage")
        assert call.token == TOKENS["worker-1"] and call.params["link_names"] is False

    run(test)


def test_a_reply_to_a_top_level_mention_goes_into_its_thread_by_default() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> status?")
        await rig.sender().send(message(asked))
        [posted] = rig.said("C0GEN")
        assert posted["thread_ts"] == asked.message_id

    run(test)


def test_a_reply_with_visibility_channel_is_posted_at_the_top() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> status?")
        await rig.sender().send(message(asked, visibility="channel"))
        [posted] = rig.said("C0GEN")
        assert "thread_ts" not in posted

    run(test)


def test_model_text_cannot_ping_anyone_but_the_intended_mention_does() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> who owns this?")
        text = "FYI <!channel>: ask <@U0W2> or <!subteam^S0BACK>, @here **now**"
        await rig.sender().send(message(asked, text=text, mentions=("agent:lead",)))
        [posted] = rig.said("C0GEN")
        assert posted["text"] == (
            f"<@{LEAD}> FYI &lt;!channel&gt;: ask &lt;@U0W2&gt; or &lt;!subteam^S0BACK&gt;, "
            "@\u2060here *now*"
        )

    run(test)


def test_a_long_answer_is_posted_in_parts_in_order_in_one_thread() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> show me the log")
        text = "\n".join(f"log line {i} " + "x" * 60 for i in range(120))
        result = await rig.sender().send(message(asked, text=text))
        posted = rig.said("C0GEN")
        assert len(posted) == 3 and all(len(m["text"]) <= 3000 for m in posted)
        assert {m["thread_ts"] for m in posted} == {asked.message_id}
        assert [m["metadata"]["event_payload"]["part"] for m in posted] == [0, 1, 2]
        assert result["messageIds"] == [m["ts"] for m in posted]
        assert rig.time.slept == [1.0, 1.0]  # one message a second in the channel

    run(test)


def test_an_ephemeral_answer_goes_to_the_person_the_host_names() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> only tell me")
        answer = message(asked, visibility="ephemeral", person=HUMAN)
        result = await rig.sender().send(answer)
        [call] = rig.slack.calls_to("chat.postEphemeral")
        assert call.params["user"] == HUMAN and call.params["channel"] == "C0GEN"
        assert result["user"] == HUMAN and rig.said("C0GEN") == []
        with pytest.raises(PermanentSendError, match="ephemeral message names no person"):
            await rig.sender().send(replace(answer, key="k2", person=None))

    run(test)


def test_a_dm_answer_in_a_dm_stays_there() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("D0ALICE", "hi")
        await rig.sender().send(message(asked, conversation="D0ALICE", visibility="dm"))
        [posted] = rig.said("D0ALICE")
        assert "thread_ts" not in posted

    run(test)


def test_an_edit_and_a_delete_of_the_agents_own_message() -> None:
    async def test(rig: Rig) -> None:
        sender = rig.sender()
        sent = await sender.send(message(text="first"))
        where = {"agent": "worker-1", "platform": "slack", "conversation": "C0GEN"}
        mine = {**where, "message_id": sent["messageId"]}
        await sender.send(Edit(**mine, key="k:edit", text="**second**"))
        [posted] = rig.said("C0GEN")
        assert posted["text"] == "*second*" and "edited" in posted
        delete = Delete(**mine, key="k:delete")
        await sender.send(delete)
        await sender.send(delete)  # already gone: done, not an error
        assert rig.said("C0GEN") == []

    run(test)


# ---- reactions and status ---------------------------------------------------------------------


def test_signals_use_the_workspace_glyphs_and_done_replaces_working() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> fix the build")
        sender = rig.sender()
        await sender.send(react(asked, "working"))
        assert rig.slack.reactions == {("C0GEN", asked.message_id, "wrench", W1)}
        result = await sender.send(react(asked, "done"))
        assert rig.slack.reactions == {("C0GEN", asked.message_id, "heavy_check_mark", W1)}
        assert result == {
            "messageId": asked.message_id,
            "reaction": "heavy_check_mark",
            "removed": ["wrench"],
        }

    run(test, signals={"slack": {"done": "heavy_check_mark"}})


def test_a_fresh_sender_still_clears_every_superseded_status_reaction() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> fix the build")
        await rig.sender().send(react(asked, "seen"))
        await rig.sender().send(react(asked, "working"))
        await rig.sender().send(react(asked, "done"))  # a new process knows nothing placed
        assert rig.slack.reactions == {("C0GEN", asked.message_id, "white_check_mark", W1)}

    run(test)


def test_a_status_known_to_be_the_first_on_its_message_removes_nothing() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> fix the build")
        queued = replace(react(asked, "queued"), placed=frozenset())  # as the engine queues it
        result = await rig.sender().send(queued)
        assert result["removed"] == [] and rig.slack.calls_to("reactions.remove") == []
        # What the host knows is placed is taken off, and only that.
        await rig.sender().send(replace(react(asked, "working"), placed=frozenset({Signal.QUEUED})))
        [removal] = rig.slack.calls_to("reactions.remove")
        assert removal.params["name"] == "clock1"
        assert rig.slack.reactions == {("C0GEN", asked.message_id, "wrench", W1)}

    run(test)


def test_a_signal_taken_back_is_removed_alone_and_taking_it_again_is_done() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> fix the build")
        sender = rig.sender()
        await sender.send(replace(react(asked, "blocked"), placed=frozenset()))
        await sender.send(replace(react(asked, "agree", agent="worker-2"), placed=frozenset()))
        back = react(asked, "blocked")
        off = Unreact(
            agent=back.agent,
            platform="slack",
            conversation=back.conversation,
            key=back.key + ":off",
            message_id=back.message_id,
            signal=Signal.BLOCKED,
        )
        assert await sender.send(off) == {
            "messageId": asked.message_id,
            "removed": ["construction"],
        }
        assert rig.slack.reactions == {("C0GEN", asked.message_id, "+1", W2)}
        await sender.send(off)  # not there any more: Slack's no_reaction is done, not an error
        assert [c.params["name"] for c in rig.slack.calls_to("reactions.remove")] == [
            "construction",
            "construction",
        ]
        assert rig.slack.calls_to("reactions.add")[-1].params["name"] == "+1"  # nothing added

    run(test)


def test_what_a_sender_remembers_placed_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indicators, "REMEMBERED", 2)

    async def test(rig: Rig) -> None:
        asked = [rig.human_says("C0GEN", f"<@U0W1> question {n}") for n in range(3)]
        sender = rig.sender()
        for event in asked:
            await sender.send(react(event, "working"))
        assert len(sender._reactions._placed) == 2
        result = await sender.send(react(asked[0], "done"))  # forgotten: every candidate
        assert len(result["removed"]) == len(superseded_by(Signal.DONE))

    run(test)


def test_a_sender_makes_its_calls_over_one_kept_connection_and_closes_it() -> None:
    async def test(rig: Rig) -> None:
        asked = [rig.human_says("C0GEN", f"<@U0W1> question {n}") for n in range(5)]
        sender = rig.sender()
        for event in asked:  # three agents' clients, posts, reactions and their removals
            await sender.send(react(event, "working", agent="lead"))
            await sender.send(react(event, "done", agent="worker-1"))
            await sender.send(message(event, agent="worker-2"))
        calls = len(rig.slack.calls)
        assert calls >= 15 and len(rig.slack.api_peers) == calls
        assert len(set(rig.slack.api_peers)) == 1, "one connection, opened once"
        session = sender.pool.session()
        assert session is not None and not session.closed
        await sender.close()
        assert session.closed and sender.pool.session() is None
        await sender.send(react(asked[0], "seen"))  # after closing: a connection per call
        assert len(rig.slack.calls) > calls

    run(test)


def test_the_engines_seen_reaction_names_its_agent_in_the_key_only() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W2> urgent")
        record = to_record(react(asked, "seen", agent="worker-2"))
        del record["agent"]
        async with outbox_for(rig.sender(), {**record, "emoji": "eyes"}) as outbox:
            assert await outbox.drain() == 1
        assert rig.slack.reactions == {("C0GEN", asked.message_id, "eyes", W2)}

    run(test)


def test_already_reacted_is_success() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> ok?")
        await rig.sender().send(react(asked, "agree"))
        result = await rig.sender().send(react(asked, "agree"))
        assert result["reaction"] == "+1"
        assert len(rig.slack.calls_to("reactions.add")) == 2
        assert rig.slack.reactions == {("C0GEN", asked.message_id, "+1", W1)}

    run(test)


def working(event: ChatEvent, on: bool, **changes: Any) -> Working:
    action = Working(
        agent="worker-1",
        platform="slack",
        conversation=event.conversation.id,
        key=f"{event.event_id}:worker-1:working:{on}",
        on=on,
        status="is working on it…" if on else "",
        in_reply_to=event.event_id,
        conversation_kind=event.conversation.kind.value,
    )
    return replace(action, **changes)


def test_working_is_a_status_set_in_the_thread_and_cleared() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> long job")
        sender = rig.sender()
        await sender.send(working(asked, True))
        await sender.send(working(asked, False))
        calls = [c.params for c in rig.slack.calls_to("assistant.threads.setStatus")]
        assert calls == [
            {"channel_id": "C0GEN", "thread_ts": asked.message_id, "status": "is working on it…"},
            {"channel_id": "C0GEN", "thread_ts": asked.message_id, "status": ""},
        ]

    run(test)


def test_working_shows_in_the_events_thread_or_the_one_the_reply_opens() -> None:
    async def test(rig: Rig) -> None:
        root = rig.human_says("C0GEN", "deploy?")
        asked = rig.human_says("C0GEN", "<@U0W1> and now?", thread_ts=root.message_id)
        rig.events.clear()  # the host's view aside: the action alone says where
        sender = rig.sender()
        await sender.send(working(asked, True, thread=root.message_id, in_reply_to=None))
        await sender.send(working(root, True, message_id=root.message_id, in_reply_to=None))
        calls = [c.params["thread_ts"] for c in rig.slack.calls_to("assistant.threads.setStatus")]
        assert calls == [root.message_id, root.message_id]

    run(test)


def test_working_shows_nothing_in_a_dm() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("D0ALICE", "hi")
        assert asked.conversation.kind is ConversationKind.DM
        assert await rig.sender().send(working(asked, True)) == {}
        assert rig.slack.calls == []

    run(test)


# ---- reliability, through the outbox ----------------------------------------------------------


def test_a_429_then_success_posts_exactly_one_message() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> ping")
        rig.slack.fail_next("chat.postMessage", status=429, headers={"Retry-After": "1"})
        async with outbox_for(rig.sender(), message(asked)) as outbox:
            assert await outbox.drain() == 1
            [(status, _)] = outbox_rows(outbox)
        assert status == "sent" and len(rig.said("C0GEN")) == 1
        assert len(rig.slack.calls_to("chat.postMessage")) == 2
        assert rig.time.slept == [1.0]  # Retry-After honoured, on the injected clock

    run(test)


def test_a_long_retry_after_leaves_the_action_due_for_the_next_round() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> ping")
        rig.slack.fail_next("chat.postMessage", status=429, headers={"Retry-After": "30"})
        async with outbox_for(rig.sender(), message(asked)) as outbox:
            assert await outbox.drain() == 0
            assert outbox_rows(outbox)[0][0] == "pending"
            assert await outbox.drain() == 1
            assert outbox_rows(outbox)[0][0] == "sent"
        assert len(rig.said("C0GEN")) == 1
        assert rig.time.slept == [1.0]  # the pacer, not the Retry-After: that was not waited

    run(test)


def test_short_429s_are_tried_again_only_up_to_the_attempts_and_success_is_tried_once() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> ping")
        sender = rig.sender(rate_limit_attempts=3)
        await sender.send(replace(react(asked, "seen"), placed=frozenset()))
        assert len(rig.slack.calls) == 1 and rig.time.slept == []  # once, nothing waited
        for _ in range(3):
            rig.slack.fail_next("reactions.add", status=429, headers={"Retry-After": "2"})
        with pytest.raises(TransientSendError, match="rate limited for 2 s"):
            await sender.send(react(asked, "working"))
        assert len(rig.slack.calls_to("reactions.add")) == 1 + 3
        assert rig.time.slept == [2.0, 2.0]  # between the three tries, not after the last

    run(test)


def test_a_timeout_after_slack_accepted_is_found_not_resent() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> ping")
        rig.slack.fail_next("chat.postMessage", timeout_after_accept=True)
        async with outbox_for(rig.sender(timeout=1), message(asked)) as outbox:
            assert await outbox.drain() == 0
            assert outbox_rows(outbox)[0][0] == "ambiguous"
            assert await outbox.drain() == 1
            [(status, result)] = outbox_rows(outbox)
        [posted] = rig.said("C0GEN")
        assert status == "sent" and posted["ts"] in result
        assert len(rig.slack.calls_to("chat.postMessage")) == 1
        [look] = rig.slack.calls_to("conversations.replies")
        assert look.params["ts"] == asked.message_id
        assert look.params["include_all_metadata"] in ("1", "true", "True")

    run(test)


def test_an_unknown_answer_under_a_message_since_deleted_is_looked_for_then_sent_once() -> None:
    """Slack answers `thread_not_found` for a parent gone with nothing under it: no earlier
    attempt can be there, so the answer is sent, not looked for again forever."""

    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> ping")
        rig.slack.fail_next("chat.postMessage", status=503)
        async with outbox_for(rig.sender(), message(asked)) as outbox:
            assert await outbox.drain() == 0
            assert outbox_rows(outbox)[0][0] == "ambiguous"
            rig.slack.messages["C0GEN"].clear()  # the question is deleted
            assert await outbox.drain() == 1
            [(status, _)] = outbox_rows(outbox)
        assert status == "sent" and len(rig.said("C0GEN")) == 1
        [look] = rig.slack.calls_to("conversations.replies")
        assert look.params["ts"] == asked.message_id

    run(test)


def test_after_a_restart_only_the_missing_part_of_a_split_message_is_posted() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> the whole log")
        text = "\n".join(f"log line {i} " + "x" * 60 for i in range(60))
        action = message(asked, text=text)
        rig.slack.fail_next("chat.postMessage", timeout_after_accept=True)
        async with outbox_for(rig.sender(timeout=1), action) as outbox:
            assert await outbox.drain() == 0  # part 0 landed, its answer was lost
            outbox.senders = {"slack": rig.sender()}  # a new process: nothing remembered
            assert await outbox.drain() == 1
        posted = rig.said("C0GEN")
        assert [m["metadata"]["event_payload"]["part"] for m in posted] == [0, 1]
        assert len(rig.slack.calls_to("chat.postMessage")) == 2

    run(test)


def test_slack_refusals_are_permanent_with_one_line_that_says_what_to_do() -> None:
    async def test(rig: Rig) -> None:
        sender = rig.sender()
        rig.slack.fail_next("chat.postMessage", error="not_in_channel")
        with pytest.raises(PermanentSendError, match=r"not_in_channel; invite the bot") as info:
            await sender.send(message())
        assert "\n" not in str(info.value)
        rig.slack.fail_next("chat.postMessage", error="missing_scope")
        with pytest.raises(PermanentSendError, match="lacks the scope chat:write"):
            await sender.send(message())
        with pytest.raises(PermanentSendError, match="no Slack bot token"):
            await sender.send(replace(message(), agent="nobody"))
        assert rig.said("C0GEN") == []

    run(test)


def test_a_server_error_is_transient_for_a_reaction_and_unknown_for_a_post() -> None:
    async def test(rig: Rig) -> None:
        asked = rig.human_says("C0GEN", "<@U0W1> hi")
        sender = rig.sender()
        rig.slack.fail_next("reactions.add", status=500)
        with pytest.raises(TransientSendError):
            await sender.send(react(asked, "seen"))
        rig.slack.fail_next("chat.postMessage", status=503)
        with pytest.raises(SendOutcomeUnknown):
            await sender.send(message(asked))

    run(test)


def test_the_pacer_spaces_messages_to_one_channel_a_second_apart() -> None:
    async def test() -> None:
        time = FakeTime()
        pacer = ChannelPacer(monotonic=time.monotonic, sleep=time.sleep)
        for channel in ("C1", "C1", "C2", "C1"):
            await pacer.wait(channel)
        assert time.slept == [1.0, 1.0]

    asyncio.run(test())


# ---- startup check ----------------------------------------------------------------------------


def test_verify_accepts_tokens_that_match_the_manifest() -> None:
    async def test(rig: Rig) -> None:
        found = await verify(rig.workspace, ENV)
        assert {agent: data["user_id"] for agent, data in found.items()} == USERS

    run(test)


def test_verify_names_each_wrong_or_missing_token_in_one_line() -> None:
    async def test(rig: Rig) -> None:
        env = {
            "SLACK_LEAD_BOT_TOKEN": TOKENS["worker-1"],  # another agent's token
            "SLACK_W1_BOT_TOKEN": "xoxb-revoked",
        }
        with pytest.raises(ManifestError) as info:
            await verify(rig.workspace, env)
        assert str(info.value).split("\n") == [
            "agents.lead: the token in SLACK_LEAD_BOT_TOKEN is for user_id U0W1, "
            "the manifest says U0LEAD",
            "agents.worker-1: Slack refused the token in SLACK_W1_BOT_TOKEN (invalid_auth)",
            "agents.worker-2.slack.bot_token_env names SLACK_W2_BOT_TOKEN, which is not set",
        ]

    run(test)


def test_verify_says_when_slack_cannot_be_reached() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    workspace = local_workspace(slack={"team_id": TEAM, "api_url": f"http://127.0.0.1:{port}/api"})
    with pytest.raises(ManifestError) as info:
        asyncio.run(verify(workspace, ENV, timeout=2))
    lines = str(info.value).split("\n")
    assert len(lines) == 3 and all("cannot reach Slack at http://127.0.0.1" in x for x in lines)


def test_missing_scopes_are_named_in_one_line() -> None:
    assert scope_problem("lead", None) is None
    granted = "chat:write,channels:history,app_mentions:read"
    line = scope_problem("lead", granted)
    assert line is not None and "\n" not in line
    assert "reactions:write" in line and "chat:write" not in line.split("scopes ")[1]


def test_a_sender_needs_every_bot_token_the_manifest_names() -> None:
    with pytest.raises(ManifestError, match="SLACK_W2_BOT_TOKEN, which is not set"):
        SlackSender(
            local_workspace(),
            {"SLACK_LEAD_BOT_TOKEN": "x", "SLACK_W1_BOT_TOKEN": "y"},
            clock=VirtualClock(),
        )


@pytest.mark.parametrize(
    "action",
    [
        {"action": "shout", "agent": "lead", "platform": "slack"},
        {"action": "send", "agent": "lead", "conversation": "C0GEN", "idempotencyKey": "k"},
        {"action": "react", "agent": "lead", "conversation": "C0GEN", "messageId": "1.0"},
        {"action": "react", "conversation": "C0GEN", "messageId": "1.0", "idempotencyKey": "k"},
        {
            "action": "react",
            "agent": "lead",
            "conversation": "C0GEN",
            "messageId": "1.0",
            "idempotencyKey": "k",
            "signal": "shrug",
        },
    ],
)
def test_a_malformed_action_fails_for_good_instead_of_looping(action: dict[str, Any]) -> None:
    async def test(rig: Rig) -> None:
        record = {"platform": "slack", **action}
        async with outbox_for(rig.sender(), record) as outbox:
            assert await outbox.drain() == 0
            assert [status for status, _ in outbox_rows(outbox)] == ["failed"]
            assert await outbox.drain() == 0
        assert rig.slack.calls == []

    run(test)
