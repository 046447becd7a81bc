"""The working indicator, asked of the agent's port: one `Working` action per event it may
answer, shown and always cleared; how each platform shows it is its sender's choice
(tests/adapters)."""

from __future__ import annotations

import json
from typing import Any

from world import scenario

from core.action_records import from_record
from core.actions import Working
from core.engine import Engine
from core.sqlite_store import SQLiteStore
from harness_bridge.tools import ChatTools
from harness_bridge.working import progress, working


def event(platform: str, kind: str, policy: str = "must_respond") -> dict[str, Any]:
    return {
        "eventId": f"{platform}:e1",
        "source": {"platform": platform, "workspaceId": "W", "messageId": "1767225601.000100"},
        "conversation": {"id": "C0GEN", "kind": kind},
        "attention": {"policy": policy, "reason": "direct_mention", "priority": "normal"},
    }


def actions(store: SQLiteStore) -> list[Working]:
    rows = store.db.execute(
        "SELECT action FROM outbox WHERE idempotency_key LIKE '%:working:%' ORDER BY n"
    )
    found = [from_record(json.loads(r[0])) for r in rows]
    assert all(isinstance(a, Working) for a in found)
    return found  # type: ignore[return-value]


def test_a_mention_shows_the_indicator_with_its_words_and_clears_it() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        await working(tools["lead"].port, (event("slack", "channel"),), on=True)
        await progress(tools["lead"].port, (event("slack", "channel"),), "thinking", "1")
        await working(tools["lead"].port, (event("slack", "channel"),), on=False)
        shown, going, cleared = actions(store)
        assert shown == Working(
            agent="lead",
            platform="slack",
            conversation="C0GEN",
            key="slack:e1:lead:working:on",
            on=True,
            status="is working on it…",
            in_reply_to="slack:e1",
            message_id="1767225601.000100",
            conversation_kind="channel",
        )
        assert (going.on, going.status) == (True, "is working on it… (thinking)")
        assert (cleared.on, cleared.status) == (False, "")

    scenario(test)


def test_the_indicator_has_a_hard_timeout_and_no_platform_of_its_own() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        for platform in ("discord", "slack"):
            await working(tools["lead"].port, (event(platform, "dm"),), on=True)
            await working(tools["lead"].port, (event(platform, "dm"),), on=False)
        found = actions(store)
        assert [(a.platform, a.on) for a in found] == [
            ("discord", True),
            ("discord", False),
            ("slack", True),
            ("slack", False),
        ]
        assert {(a.timeout_s, a.conversation_kind) for a in found} == {(120, "dm")}

    scenario(test)


def test_nothing_is_shown_for_what_needs_no_answer() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        for policy in ("ack_only", "must_not_respond"):
            await working(tools["lead"].port, (event("slack", "channel", policy),), on=True)
        assert actions(store) == []

    scenario(test)


def test_a_turn_that_may_answer_shows_the_indicator_from_its_start() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        # A role mention is may_respond for the agent selected to answer it.
        await working(
            tools["worker-1"].port, (event("webchat", "channel", "may_respond"),), on=True
        )
        ((start,),) = [actions(store)]
        assert (start.platform, start.on) == ("webchat", True)

    scenario(test)
