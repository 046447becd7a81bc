"""A streamed reply on Slack end to end: the agent's port, the outbox and the real slack-sdk
sender against the fake Slack, fed a long answer on a virtual clock."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from builders import LEAD, TEAM, local_workspace, slack_body, slack_join, slack_message
from fakes.slack import FakeSlack
from streamed_answer import WORDS, Redraws, answer, exact, stream
from test_slack_send import ENV, TOKENS, USERS

from adapters.slack import normalise
from adapters.slack.pacing import ChannelPacer
from adapters.slack.plugin import DRAFT_LIMIT
from adapters.slack.send import SlackSender
from core.clock import VirtualClock, parse_time
from core.engine import Engine
from core.outbox import Outbox
from core.sqlite_store import SQLiteStore
from harness_bridge.streamed_reply import AS_FILE, REST_AS_FILE, StreamedReply

ASKED = "1767225601.000100"


def streamed(rate_limited: int, parts: int | None = WORDS) -> None:
    """Streams `answer()` as the lead answering a mention in #general, with the first
    `rate_limited` redraws answered 429, in at most `parts` messages (None: the workspace's
    setting) before it goes as a file; checks what Slack holds at the end."""

    async def go() -> None:
        async with FakeSlack() as slack:
            for agent, token in TOKENS.items():
                slack.add_bot(token, USERS[agent], f"B{USERS[agent][1:]}", TEAM)
            for _ in range(rate_limited):
                slack.fail_next("chat.update", status=429, headers={"Retry-After": "3"})
            workspace = local_workspace(slack={"team_id": TEAM, "api_url": slack.api_url})
            clock = VirtualClock(parse_time("2026-01-01T00:00:10Z"))
            store = SQLiteStore(":memory:")
            await store.open()
            engine = Engine(workspace, store, clock)
            asked = slack_message(ASKED, f"<@{LEAD}> write the whole report")
            event = normalise(slack_body(asked))
            joined = [normalise(slack_body(slack_join(user))) for user in USERS.values()]
            assert event is not None
            async with store.transaction():
                for seen in [*joined, event]:
                    assert seen is not None
                    await engine.ingest(seen)

            def now() -> float:
                return clock.now().timestamp()

            async def wait(seconds: float) -> None:
                clock.advance(timedelta(seconds=seconds))

            sender = SlackSender(
                workspace,
                ENV,
                lookup=engine.event,
                clock=clock,
                pacer=ChannelPacer(monotonic=now, sleep=wait),
                sleep=wait,
            )
            outbox = Outbox(store, clock, {"slack": sender})
            updates = Redraws()
            seen = 0

            async def drain() -> None:
                nonlocal seen
                await outbox.drain()
                calls = slack.calls_to("chat.update")
                for call in calls[seen:]:
                    updates.at(str(call.params["ts"]), now())
                seen = len(calls)

            reply = await stream(
                engine, event.event_id, clock, drain, limit=DRAFT_LIMIT, parts=parts
            )
            await sender.close()
            if parts is None:
                delivered_as_file(slack, reply)
            else:
                delivered(slack, reply, updates, store, rate_limited)
            await store.close()

    asyncio.run(asyncio.wait_for(go(), 120))


def delivered(
    slack: FakeSlack,
    reply: StreamedReply,
    updates: Redraws,
    store: SQLiteStore,
    rate_limited: int,
) -> None:
    """The whole answer, exact, across the messages the reply posted once each, in the thread
    asked in; each message redrawn at most once a second; every 429'd draft given up."""
    said = [m for m in slack.messages.get("C0GEN", []) if m.get("user") == LEAD]
    texts = [str(m["text"]) for m in said]
    assert exact(texts)
    assert len(said) == len(reply.keys) >= 6  # continued, each part posted once
    assert all(len(text) <= DRAFT_LIMIT for text in texts)
    assert {m.get("thread_ts") for m in said} == {ASKED}  # all in the thread asked in
    assert len(updates.times[str(said[0]["ts"])]) >= 5  # edited in place as it grew
    assert updates.paced()
    assert len(slack.calls_to("chat.postMessage")) == len(said)
    # A message's finish asks for nothing its drafts did not: Slack shows it as they are shown.
    assert len({frozenset(c.params) for c in slack.calls_to("chat.update")}) == 1
    rows = store.db.execute(
        "SELECT status, action FROM outbox WHERE action LIKE '%\"edit\"%'"
    ).fetchall()
    assert sum(1 for status, _ in rows if status == "failed") == rate_limited


def test_a_long_streamed_reply_is_edited_in_place_at_most_once_a_second_then_continued() -> None:
    streamed(rate_limited=0)


def test_redraws_answered_429_post_nothing_twice_and_the_final_text_is_exact() -> None:
    streamed(rate_limited=3)


def delivered_as_file(slack: FakeSlack, reply: StreamedReply) -> None:
    """The answer shown in the workspace's three messages, the last saying the rest follows,
    then the whole answer as answer.md, shared once, in the thread asked in."""
    said = [m for m in slack.messages.get("C0GEN", []) if m.get("user") == LEAD]
    shown = [str(m["text"]) for m in said if not m.get("upload")]
    assert len(shown) == 3 == len(reply.keys) and reply.as_file
    assert all(len(text) <= DRAFT_LIMIT for text in shown)
    assert shown[-1].endswith(REST_AS_FILE) and not shown[0].endswith(REST_AS_FILE)
    (shared,) = slack.uploads.shared()
    assert (shared.name, shared.text) == ("answer.md", "".join(answer()).strip())
    (message,) = [m for m in said if m.get("upload")]
    assert message["text"] == AS_FILE and message["thread_ts"] == ASKED


def test_a_streamed_reply_past_the_workspace_s_parts_stops_and_goes_whole_as_a_file() -> None:
    streamed(rate_limited=0, parts=None)
