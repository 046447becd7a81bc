"""Every row of spec 000's policy table, replayed from Slack-shaped and Discord-shaped payloads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from builders import (
    D_BACKEND_ROLE,
    D_HUMAN,
    D_HUMAN2,
    D_LEAD,
    D_W1,
    HUMAN,
    HUMAN2,
    LEAD,
    W1,
    axes,
    delivered,
    discord_dispatch,
    discord_message,
    line,
    run,
    slack_body,
    slack_message,
)

AGENTS = ("lead", "worker-1", "worker-2")
BASE = 1767225600  # 2026-01-01T00:00:00Z


def at(second: int) -> str:
    return f"2026-01-01T00:{second // 60:02d}:{second % 60:02d}Z"


def ts(second: int) -> str:
    return f"{BASE + second}.000100"


def iso(second: int) -> str:
    return at(second).replace("Z", "+00:00")


def snowflake(n: int) -> str:
    return str(830000000000000000 + n)


def slack_all(second: int, event: dict[str, Any]) -> list[str]:
    """One channel message as Slack delivers it: once per agent's app."""
    return [line(at(second), "slack", slack_body(dict(event), via=a), via=a) for a in AGENTS]


def discord_all(second: int, payload: dict[str, Any]) -> list[str]:
    return [line(at(second), "discord", payload, via=a) for a in AGENTS]


class Slack:
    name = "slack"

    def dm(self, second: int, text: str) -> list[str]:
        event = slack_message(ts(second), text, channel="D0LEAD", channel_type="im")
        return [line(at(second), "slack", slack_body(event, via="lead"), via="lead")]

    def say(
        self,
        second: int,
        text: str,
        *,
        user: str = HUMAN,
        thread: int | None = None,
        mention: str | None = None,
    ) -> list[str]:
        body = f"<@{mention}> {text}" if mention else text
        thread_ts = ts(thread) if thread is not None else None
        return slack_all(second, slack_message(ts(second), body, user=user, thread_ts=thread_ts))

    def role(self, second: int, text: str) -> list[str]:
        return slack_all(second, slack_message(ts(second), f"<!subteam^S0BACK> {text}"))

    def open_thread(self, second: int, text: str) -> tuple[list[str], int | None]:
        # A Slack thread hangs off a channel message; its replies carry thread_ts.
        return self.say(second, text, mention=LEAD), second

    def reply_under(self, second: int, root: int, text: str) -> list[str]:
        # The first reply under a channel message opens its thread.
        return self.say(second, text, thread=root)

    agent_user = {"lead": LEAD, "worker-1": W1}
    human2 = HUMAN2


class Discord:
    name = "discord"
    thread_channel = "840000000000000001"

    def dm(self, second: int, text: str) -> list[str]:
        payload = discord_message(
            snowflake(second), text, channel="850000000000000001", guild=None, timestamp=iso(second)
        )
        return [line(at(second), "discord", payload, via="lead")]

    def say(
        self,
        second: int,
        text: str,
        *,
        user: str = D_HUMAN,
        thread: int | None = None,
        mention: str | None = None,
    ) -> list[str]:
        channel = self.thread_channel if thread is not None else "820000000000000001"
        content = f"<@{mention}> {text}" if mention else text
        payload = discord_message(
            snowflake(second),
            content,
            author=user,
            channel=channel,
            mentions=[mention] if mention else [],
            timestamp=iso(second),
            bot=user in (D_LEAD, D_W1),
        )
        return discord_all(second, payload)

    def role(self, second: int, text: str) -> list[str]:
        payload = discord_message(
            snowflake(second),
            f"<@&{D_BACKEND_ROLE}> {text}",
            roles=[D_BACKEND_ROLE],
            timestamp=iso(second),
        )
        return discord_all(second, payload)

    def open_thread(self, second: int, text: str) -> tuple[list[str], int | None]:
        created = discord_dispatch(
            "THREAD_CREATE",
            {
                "id": self.thread_channel,
                "guild_id": "800000000000000001",
                "parent_id": "820000000000000001",
                "owner_id": D_HUMAN,
                "type": 11,
                "name": "deploy question",
                "newly_created": True,
            },
        )
        lines = discord_all(second, created)
        return lines + self.say(second, text, mention=D_LEAD, thread=second), second

    def reply_under(self, second: int, root: int, text: str) -> list[str]:
        # A thread started from a message is a channel under that message's id.
        thread = snowflake(root)
        created = discord_dispatch(
            "THREAD_CREATE",
            {
                "id": thread,
                "guild_id": "800000000000000001",
                "parent_id": "820000000000000001",
                "owner_id": D_HUMAN,
                "type": 11,
                "name": "a question",
                "newly_created": True,
            },
        )
        payload = discord_message(snowflake(second), text, channel=thread, timestamp=iso(second))
        return discord_all(second, created) + discord_all(second, payload)

    agent_user = {"lead": D_LEAD, "worker-1": D_W1}
    human2 = D_HUMAN2


PLATFORMS = [Slack(), Discord()]
Platform = Slack | Discord


def decide(lines: list[str]) -> dict[str, list[tuple[str, str, str]]]:
    records, _, report = run(lines)
    assert not report, report
    return {agent: [axes(p) for p in found] for agent, found in delivered(records).items()}


def last(lines: list[str], agent: str) -> tuple[str, str, str]:
    return decide(lines)[agent][-1]


def params_for(lines: list[str], agent: str) -> dict[str, Any]:
    records, _, report = run(lines)
    assert not report, report
    return delivered(records)[agent][-1]


each = pytest.mark.parametrize("p", PLATFORMS, ids=lambda p: p.name)


@each
def test_dm_to_this_session_is_to_me_must_respond_buffered(p: Platform) -> None:
    found = decide(p.dm(1, "Can you check whether the deploy is blocked?"))
    assert found == {"lead": [("to_me", "must_respond", "buffered")]}


@each
def test_thanks_in_a_dm_is_ack_only_notify(p: Platform) -> None:
    lines = p.dm(1, "can you look at the logs?") + p.dm(60, "thanks!")
    assert last(lines, "lead") == ("to_me", "ack_only", "notify")


@each
def test_direct_mention_is_to_me_must_respond_buffered_with_thread_context(p: Platform) -> None:
    lines = p.say(1, "can you check the deploy?", mention=p.agent_user["lead"])
    params = params_for(lines, "lead")
    assert axes(params) == ("to_me", "must_respond", "buffered")
    assert params["injection"]["context"] == "thread_window"
    assert params["attention"]["reason"] == "direct_mention"


@each
def test_approval_to_me_is_must_respond_immediate(p: Platform) -> None:
    lines = p.say(1, "approved, go ahead and ship it", mention=p.agent_user["lead"])
    params = params_for(lines, "lead")
    assert axes(params) == ("to_me", "must_respond", "immediate")
    assert params["attention"]["reason"] == "approval"


@each
def test_blocker_to_me_is_must_respond_buffered(p: Platform) -> None:
    lines = p.say(1, "I'm blocked on the migration, can you help?", mention=p.agent_user["lead"])
    assert last(lines, "lead") == ("to_me", "must_respond", "buffered")


@each
def test_direct_thread_question_is_to_me_must_respond(p: Platform) -> None:
    opened, root = p.open_thread(1, "can you check the deploy?")
    lines = opened
    lines += p.say(10, "on it, the deploy is green", user=p.agent_user["lead"], thread=root)
    lines += p.say(100, "and the rollback step?", thread=root)
    found = params_for(lines, "lead")
    assert axes(found) == ("to_me", "must_respond", "buffered")
    assert found["attention"]["reason"] == "direct_thread_question"


@each
def test_the_first_reply_under_an_agents_message_is_a_question_to_it(p: Platform) -> None:
    lines = p.say(1, "the capital of Italy is Rome", user=p.agent_user["lead"])
    lines += p.reply_under(10, 1, "and of Spain?")
    found = params_for(lines, "lead")
    assert axes(found) == ("to_me", "must_respond", "buffered")
    assert found["attention"]["reason"] == "direct_thread_question"
    assert last(lines, "worker-1") == ("ambient", "must_not_respond", "tool_mailbox")


@each
def test_role_mention_gives_one_claimant_buffered_and_knocks_the_rest(p: Platform) -> None:
    found = decide(p.role(1, "who can look at the failing build?"))
    workers = sorted([found["worker-1"][-1], found["worker-2"][-1]])
    assert workers == [
        ("to_my_role", "may_respond", "buffered"),
        ("to_my_role", "must_not_respond", "notify"),
    ]
    assert found["lead"][-1] == ("to_other", "must_not_respond", "tool_mailbox")


def test_a_role_mentioned_beside_an_agent_offers_the_role_nothing_the_agent_answers() -> None:
    """One of the role selected would hold the claim, which takes the question from the agent
    named: the lead once stayed silent while a worker answered what was asked of the lead."""
    asked = slack_message(ts(1), f"<@{LEAD}> <!subteam^S0BACK> who can look at the build?")
    found = decide(slack_all(1, asked))
    assert found["lead"] == [("to_me", "must_respond", "buffered")]
    assert (
        found["worker-1"] == found["worker-2"] == [("to_other", "must_not_respond", "tool_mailbox")]
    )


@each
def test_thread_reply_where_this_agent_participates_is_to_my_role_notify(p: Platform) -> None:
    opened, root = p.open_thread(1, "can you check the deploy?")
    lines = opened
    lines += p.say(10, "the deploy is green", user=p.agent_user["lead"], thread=root)
    lines += p.say(100, "I saw the same on staging", user=p.human2, thread=root)
    assert last(lines, "lead") == ("to_my_role", "may_respond", "notify")


@each
def test_message_to_another_agent_is_to_other_must_not_respond(p: Platform) -> None:
    lines = p.say(1, "please rerun the tests", mention=p.agent_user["worker-1"])
    found = decide(lines)
    assert found["lead"] == [("to_other", "must_not_respond", "tool_mailbox")]
    assert found["worker-1"] == [("to_me", "must_respond", "buffered")]


@each
def test_agent_message_with_no_task_is_to_other_must_not_respond(p: Platform) -> None:
    lines = p.say(1, "I finished refactoring the parser module", user=p.agent_user["worker-1"])
    found = decide(lines)
    assert found["lead"] == [("to_other", "must_not_respond", "tool_mailbox")]
    assert found["worker-1"] == [("ambient", "must_not_respond", "silent")]


@each
def test_unmentioned_channel_message_is_ambient_tool_mailbox(p: Platform) -> None:
    found = decide(p.say(1, "anyone else seeing slow builds today"))
    assert set(map(tuple, (v[0] for v in found.values()))) == {
        ("ambient", "must_not_respond", "tool_mailbox")
    }
    assert sorted(found) == ["lead", "worker-1", "worker-2"]


@each
def test_status_broadcast_is_ambient_digest(p: Platform) -> None:
    found = decide(p.say(1, "status: deploy of api v2.3 finished"))
    assert found["lead"] == [("ambient", "must_not_respond", "digest")]


Scenario = Callable[[Platform], list[str]]
