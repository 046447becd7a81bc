"""The working indicator: Slack thread status or Discord typing, shown and always cleared."""

from __future__ import annotations

from typing import Any

from world import scenario

from core.engine import Engine
from core.sqlite_store import SQLiteStore
from harness_bridge.tools import ChatTools
from harness_bridge.working import working


def event(platform: str, kind: str, policy: str = "must_respond") -> dict[str, Any]:
    return {
        "eventId": f"{platform}:e1",
        "source": {"platform": platform, "workspaceId": "W", "messageId": "1767225601.000100"},
        "conversation": {"id": "C0GEN", "kind": kind},
        "attention": {"policy": policy, "reason": "direct_mention", "priority": "normal"},
    }


def actions(store: SQLiteStore) -> list[dict[str, Any]]:
    import json

    rows = store.db.execute("SELECT action FROM outbox WHERE idempotency_key LIKE '%:working:%'")
    return [json.loads(r[0]) for r in rows]


def test_a_slack_mention_shows_a_thread_status_and_clears_it() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        await working(engine, "lead", (event("slack", "channel"),), on=True)
        await working(engine, "lead", (event("slack", "channel"),), on=False)
        shown, cleared = actions(store)
        assert (shown["action"], shown["thread"], shown["status"]) == (
            "status",
            "1767225601.000100",
            "is working on it…",
        )
        assert cleared["status"] == ""

    scenario(test)


def test_discord_gets_typing_with_a_hard_timeout() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        await working(engine, "lead", (event("discord", "dm"),), on=True)
        await working(engine, "lead", (event("discord", "dm"),), on=False)
        start, stop = actions(store)
        assert (start["action"], start["state"], start["timeoutSeconds"]) == (
            "typing",
            "start",
            120,
        )
        assert stop["state"] == "stop"

    scenario(test)


def test_nothing_is_shown_for_what_needs_no_answer_or_a_slack_dm() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        for policy in ("ack_only", "must_not_respond"):
            await working(engine, "lead", (event("slack", "channel", policy),), on=True)
        await working(engine, "lead", (event("slack", "dm"),), on=True)
        assert actions(store) == []

    scenario(test)


def test_a_turn_that_may_answer_shows_typing_from_its_start() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        # A role mention is may_respond for the agent selected to answer it.
        await working(engine, "worker-1", (event("webchat", "channel", "may_respond"),), on=True)
        ((start,),) = [actions(store)]
        assert (start["action"], start["state"]) == ("typing", "start")

    scenario(test)
