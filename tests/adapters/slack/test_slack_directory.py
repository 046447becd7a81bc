"""Cached Slack lookups: the real slack-sdk against a fake Slack on 127.0.0.1, on a virtual
clock. Fresh answers cost no call, membership events cost no call, failures fall back to what
was known, and concurrent lookups share one request."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from aiohttp import web
from builders import HUMAN, HUMAN2, LEAD, W1, W2, local_workspace
from fakes.slack import Bot, FakeSlack
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.directory import DEFAULT_TTL, SlackDirectory
from core.clock import VirtualClock, parse_time

TOKENS = {"lead": "xoxb-lead-test", "worker-1": "xoxb-w1-test", "worker-2": "xoxb-w2-test"}
USERS = {"lead": LEAD, "worker-1": W1, "worker-2": W2}
LOG = "adapters.slack.directory"


class PagedSlack(FakeSlack):
    """FakeSlack whose `conversations.members` pages with real cursors (the fake's own pages
    never carry one), and whose answers to it can be held back until `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()
        self.release.set()

    def _members(self, params: dict[str, Any], bot: Bot) -> dict[str, Any]:
        members = self.members.get(str(params.get("channel")), [])
        start, limit = int(params.get("cursor") or 0), int(params.get("limit") or 100)
        end = start + limit
        cursor = str(end) if end < len(members) else ""
        page = members[start:end]
        return {"ok": True, "members": page, "response_metadata": {"next_cursor": cursor}}

    async def _api(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["method"] == "conversations.members":
            self.arrived.set()
            await asyncio.wait_for(self.release.wait(), self.wait_timeout)
        return await super()._api(request)


@dataclass
class Rig:
    slack: PagedSlack
    clock: VirtualClock
    clients: dict[str, AsyncWebClient]

    def directory(self, *agents: str, **options: Any) -> SlackDirectory:
        """A directory reading with these agents' clients (default: the lead's alone)."""
        chosen = {agent: self.clients[agent] for agent in agents or ("lead",)}
        clients = chosen["lead"] if list(chosen) == ["lead"] else chosen
        return SlackDirectory(local_workspace(), clients, clock=self.clock, **options)

    def calls(self, method: str) -> int:
        return len(self.slack.calls_to(method))


@asynccontextmanager
async def rigged() -> AsyncIterator[Rig]:
    async with PagedSlack() as slack:
        clients = {}
        for agent, token in TOKENS.items():
            slack.add_bot(token, USERS[agent], f"B{USERS[agent][1:]}")
            # No slack-sdk retries: its connection-error retry sleeps on the wall clock.
            clients[agent] = AsyncWebClient(
                token=token, base_url=slack.api_url, timeout=5, retry_handlers=[]
            )
        yield Rig(slack, VirtualClock(parse_time("2026-01-01T00:00:00Z")), clients)


def run(test: Callable[[Rig], Awaitable[None]]) -> None:
    async def go() -> None:
        async with asyncio.timeout(20), rigged() as rig:
            await test(rig)

    asyncio.run(go())


def dead_url() -> str:
    """An API URL on a port the OS just gave back: nothing listens there."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/api/"


# ---- user groups ------------------------------------------------------------------------------


def test_a_user_group_looked_up_again_within_the_ttl_costs_no_second_call() -> None:
    async def test(rig: Rig) -> None:
        rig.slack.usergroups["S0BACK"] = [HUMAN, HUMAN2]
        directory = rig.directory()
        assert await directory.usergroup_members("S0BACK") == {HUMAN, HUMAN2}
        rig.slack.usergroups["S0BACK"] = [HUMAN]
        rig.clock.advance(DEFAULT_TTL - timedelta(seconds=1))
        assert await directory.usergroup_members("S0BACK") == {HUMAN, HUMAN2}
        assert rig.calls("usergroups.users.list") == 1
        assert rig.slack.calls_to("usergroups.users.list")[0].params == {"usergroup": "S0BACK"}

    run(test)


def test_a_user_group_is_asked_again_once_its_ttl_has_passed() -> None:
    async def test(rig: Rig) -> None:
        rig.slack.usergroups["S0BACK"] = [HUMAN, HUMAN2]
        directory = rig.directory()
        await directory.usergroup_members("S0BACK")
        rig.slack.usergroups["S0BACK"] = [HUMAN]
        rig.clock.advance(DEFAULT_TTL)
        assert await directory.usergroup_members("S0BACK") == {HUMAN}
        assert await directory.usergroup_members("S0BACK") == {HUMAN}
        assert rig.calls("usergroups.users.list") == 2

    run(test)


def test_a_user_group_slack_does_not_know_has_no_members_and_that_answer_is_kept() -> None:
    async def test(rig: Rig) -> None:
        directory = rig.directory()
        assert await directory.usergroup_members("S0GONE") == frozenset()
        assert await directory.usergroup_members("S0GONE") == frozenset()
        assert rig.calls("usergroups.users.list") == 1

    run(test)


# ---- conversation membership ------------------------------------------------------------------


def test_agents_in_maps_the_member_bot_users_to_agent_ids_through_the_manifest() -> None:
    async def test(rig: Rig) -> None:
        rig.slack.members["C0GEN"] = [HUMAN, LEAD, "U0STRANGERBOT", W2]
        directory = rig.directory()
        assert await directory.agents_in("C0GEN") == {"lead", "worker-2"}
        assert await directory.members("C0GEN") == {HUMAN, LEAD, "U0STRANGERBOT", W2}
        assert await directory.agents_in("C0EMPTY") == set()
        assert rig.calls("conversations.members") == 2

    run(test)


def test_members_are_read_across_every_page_by_cursor() -> None:
    async def test(rig: Rig) -> None:
        people = [f"U0P{n:03d}" for n in range(7)]
        rig.slack.members["C0BIG"] = [*people, W1]
        directory = rig.directory(page_size=3)
        assert await directory.members("C0BIG") == {*people, W1}
        assert await directory.agents_in("C0BIG") == {"worker-1"}
        cursors = [
            call.params.get("cursor") for call in rig.slack.calls_to("conversations.members")
        ]
        assert cursors == [None, "3", "6"]

    run(test)


def test_join_and_leave_events_change_membership_without_a_call() -> None:
    async def test(rig: Rig) -> None:
        rig.slack.members["C0GEN"] = [HUMAN, LEAD]
        directory = rig.directory()
        assert await directory.agents_in("C0GEN") == {"lead"}
        directory.note_joined("C0GEN", W1)
        directory.note_left("C0GEN", LEAD)
        directory.note_joined("C0GEN", HUMAN2)
        assert await directory.agents_in("C0GEN") == {"worker-1"}
        assert await directory.members("C0GEN") == {HUMAN, HUMAN2, W1}
        assert rig.calls("conversations.members") == 1

    run(test)


def test_events_about_a_channel_never_looked_up_do_not_invent_its_members() -> None:
    async def test(rig: Rig) -> None:
        rig.slack.members["C0OPS"] = [HUMAN, LEAD, W2]
        directory = rig.directory()
        directory.note_joined("C0OPS", W1)
        assert await directory.agents_in("C0OPS") == {"lead", "worker-2"}
        assert rig.calls("conversations.members") == 1

    run(test)


def test_concurrent_lookups_share_one_request_and_keep_the_events_noted_meanwhile() -> None:
    async def test(rig: Rig) -> None:
        rig.slack.members["C0GEN"] = [HUMAN, LEAD]
        rig.slack.release.clear()
        directory = rig.directory()
        first = asyncio.create_task(directory.agents_in("C0GEN"))
        await asyncio.wait_for(rig.slack.arrived.wait(), 5)
        # Slack has read the list; these events happened after it did.
        directory.note_joined("C0GEN", W2)
        directory.note_left("C0GEN", LEAD)
        others = [asyncio.create_task(directory.agents_in("C0GEN")) for _ in range(4)]
        rig.slack.release.set()
        answers = await asyncio.gather(first, *others)
        assert answers == [{"worker-2"}] * 5
        assert rig.calls("conversations.members") == 1
        assert await directory.members("C0GEN") == {HUMAN, W2}

    run(test)


def test_a_private_channel_one_agent_cannot_see_is_read_with_another_agents_token() -> None:
    async def test(rig: Rig) -> None:
        rig.slack.members["G0PRIV"] = [HUMAN, W1]
        rig.slack.fail_next("conversations.members", error="channel_not_found")
        directory = rig.directory("lead", "worker-1")
        assert await directory.agents_in("G0PRIV") == {"worker-1"}
        tokens = [call.token for call in rig.slack.calls_to("conversations.members")]
        assert tokens == [TOKENS["lead"], TOKENS["worker-1"]]

    run(test)


def test_a_channel_no_agent_can_see_has_no_members_and_logs_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def test(rig: Rig) -> None:
        rig.slack.fail_next("conversations.members", error="channel_not_found")
        rig.slack.fail_next("conversations.members", error="channel_not_found")
        directory = rig.directory("lead", "worker-1")
        assert await directory.agents_in("C0NONE") == set()
        assert await directory.agents_in("C0NONE") == set()
        assert rig.calls("conversations.members") == 2

    with caplog.at_level(logging.WARNING, logger=LOG):
        run(test)
    assert caplog.records == []


# ---- display names ----------------------------------------------------------------------------


def test_a_name_is_the_display_name_else_the_real_name_else_the_user_name() -> None:
    async def test(rig: Rig) -> None:
        rig.slack.add_user(HUMAN, "Alice")
        rig.slack.users[HUMAN]["profile"]["display_name"] = "ally"
        rig.slack.add_user(HUMAN2, "Bob Jones")
        rig.slack.users[HUMAN2]["profile"]["display_name"] = ""
        rig.slack.add_user("U0CAROL", "Carol")
        rig.slack.users["U0CAROL"].update(real_name="", profile={"display_name": ""})
        directory = rig.directory()
        assert await directory.display_name(HUMAN) == "ally"
        assert await directory.display_name(HUMAN2) == "Bob Jones"
        assert await directory.display_name("U0CAROL") == "carol"
        assert await directory.display_name(HUMAN) == "ally"
        assert rig.calls("users.info") == 3

    run(test)


def test_a_user_slack_does_not_know_has_no_name_and_that_answer_is_kept() -> None:
    async def test(rig: Rig) -> None:
        directory = rig.directory()
        assert await directory.display_name("U0NOBODY") is None
        assert await directory.display_name("U0NOBODY") is None
        assert rig.calls("users.info") == 1

    run(test)


def test_concurrent_name_lookups_share_one_request() -> None:
    async def test(rig: Rig) -> None:
        rig.slack.add_user(HUMAN, "Alice")
        directory = rig.directory()
        names = await asyncio.gather(*(directory.display_name(HUMAN) for _ in range(5)))
        assert names == ["Alice"] * 5
        assert rig.calls("users.info") == 1

    run(test)


# ---- failures ---------------------------------------------------------------------------------


def test_when_slack_rate_limits_a_refresh_the_stale_answer_is_used_until_retry_after(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def test(rig: Rig) -> None:
        rig.slack.members["C0GEN"] = [HUMAN, LEAD]
        directory = rig.directory()
        assert await directory.agents_in("C0GEN") == {"lead"}
        rig.slack.members["C0GEN"] = [HUMAN, W1]
        rig.clock.advance(DEFAULT_TTL)
        rig.slack.fail_next("conversations.members", status=429, headers={"Retry-After": "60"})
        assert await directory.agents_in("C0GEN") == {"lead"}
        rig.clock.advance(timedelta(seconds=59))
        assert await directory.agents_in("C0GEN") == {"lead"}
        assert rig.calls("conversations.members") == 2
        rig.clock.advance(timedelta(seconds=1))
        assert await directory.agents_in("C0GEN") == {"worker-1"}
        assert rig.calls("conversations.members") == 3

    with caplog.at_level(logging.WARNING, logger=LOG):
        run(test)
    assert [r.getMessage() for r in caplog.records] == [
        "slack directory: conversations.members C0GEN failed (ratelimited); "
        "using the answer from 600 s ago; asking again in 60 s"
    ]


def test_when_slack_cannot_be_reached_the_stale_name_is_used(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def test(rig: Rig) -> None:
        rig.slack.add_user(HUMAN, "Alice")
        directory = rig.directory()
        assert await directory.display_name(HUMAN) == "Alice"
        rig.clients["lead"].base_url = dead_url()
        rig.clock.advance(DEFAULT_TTL)
        assert await directory.display_name(HUMAN) == "Alice"
        assert await directory.display_name(HUMAN) == "Alice"

    with caplog.at_level(logging.WARNING, logger=LOG):
        run(test)
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        "slack directory: users.info U0ALICE failed (ClientConnectorError); "
        "using the answer from 600 s ago; asking again in 30 s"
    )


def test_a_failure_with_nothing_known_gives_empty_answers_and_one_line_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def test(rig: Rig) -> None:
        rig.slack.add_user(HUMAN, "Alice")
        rig.slack.members["C0GEN"] = [LEAD]
        rig.slack.fail_next("users.info", status=500)
        rig.slack.fail_next("conversations.members", status=503)
        directory = rig.directory()
        assert await directory.display_name(HUMAN) is None
        assert await directory.agents_in("C0GEN") == set()
        rig.clock.advance(timedelta(seconds=30))
        assert await directory.display_name(HUMAN) == "Alice"
        assert await directory.agents_in("C0GEN") == {"lead"}

    with caplog.at_level(logging.WARNING, logger=LOG):
        run(test)
    assert [r.getMessage() for r in caplog.records] == [
        "slack directory: users.info U0ALICE failed (internal_error); "
        "nothing known yet; asking again in 30 s",
        "slack directory: conversations.members C0GEN failed (internal_error); "
        "nothing known yet; asking again in 30 s",
    ]


def test_a_missing_scope_is_reported_once_in_a_line_that_says_what_to_add(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def test(rig: Rig) -> None:
        rig.slack.add_user(HUMAN, "Alice")
        rig.slack.add_user(HUMAN2, "Bob")
        for _ in range(3):
            rig.slack.fail_next("users.info", error="missing_scope")
        directory = rig.directory()
        assert await directory.display_name(HUMAN) is None
        assert await directory.display_name(HUMAN2) is None
        assert await directory.display_name(HUMAN) is None  # a refusal is not asked again soon
        rig.clock.advance(DEFAULT_TTL)
        assert await directory.display_name(HUMAN) is None
        assert rig.calls("users.info") == 3

    with caplog.at_level(logging.WARNING, logger=LOG):
        run(test)
    [record] = caplog.records
    assert record.levelno == logging.ERROR
    assert record.getMessage() == (
        "slack directory: the Slack app lacks the scope users:read for users.info; "
        "add it (manifests/slack/app-manifest.yaml has it) and reinstall the app"
    )


def test_an_app_lacking_a_scope_is_named_and_another_agents_token_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def test(rig: Rig) -> None:
        rig.slack.usergroups["S0LEADS"] = [HUMAN]
        rig.slack.fail_next("usergroups.users.list", error="missing_scope")
        directory = rig.directory("lead", "worker-2")
        assert await directory.usergroup_members("S0LEADS") == {HUMAN}

    with caplog.at_level(logging.WARNING, logger=LOG):
        run(test)
    assert [r.getMessage() for r in caplog.records] == [
        "slack directory: the Slack app of lead lacks the scope usergroups:read for "
        "usergroups.users.list; add it (manifests/slack/app-manifest.yaml has it) and "
        "reinstall the app"
    ]
