"""The chat tools on the host: reads see only the agent's events; guards refuse and post nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from builders import (
    slack_body,
    slack_delete,
    slack_message,
)
from world import BASE, CHATTER, DM, ROLE, THANKS, scenario

from adapters.slack import normalise
from core.engine import Engine
from core.errors import ToolError
from core.sqlite_store import SQLiteStore
from harness_bridge.tools import MAX_READ_CHARS, ChatTools


def reply(event_id: str, text: str, **extra: Any) -> dict[str, Any]:
    conversation = event_id.split(":")[2]
    return {"target": {"conversation": conversation}, "text": text, "inReplyTo": event_id, **extra}


def outbox(store: SQLiteStore) -> list[tuple[str, str]]:
    return [
        tuple(r)
        for r in store.db.execute(
            "SELECT agent, idempotency_key FROM outbox"
            " WHERE idempotency_key NOT LIKE '%:react:seen'"
        )
    ]


async def disposition(store: SQLiteStore, event_id: str, agent: str) -> str | None:
    for d in await store.deliveries(event_id):
        if d.decision.agent == agent:
            return d.disposition.value if d.disposition else None
    return None


def test_send_message_twice_with_one_key_queues_once() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        args = reply(DM, "The deploy is green.", idempotencyKey="k-1")
        first = await tools["lead"].call("chat_send_message", args)
        again = await tools["lead"].call("chat_send_message", args)
        assert (first["status"], again["status"]) == ("queued", "duplicate")
        assert outbox(store) == [("lead", "lead/k-1")]
        assert await disposition(store, DM, "lead") == "responded"

    scenario(test)


def test_a_retry_without_a_key_gets_the_same_derived_key() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        first = await tools["lead"].call("chat_send_message", reply(DM, "Green."))
        again = await tools["lead"].call("chat_send_message", reply(DM, "Green."))
        assert first["idempotencyKey"] == again["idempotencyKey"] and again["status"] == "duplicate"
        assert len(outbox(store)) == 1

    scenario(test)


def test_a_different_second_answer_is_refused() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        await tools["lead"].call("chat_send_message", reply(DM, "Green."))
        with pytest.raises(ToolError, match="already answered"):
            await tools["lead"].call("chat_send_message", reply(DM, "Actually, red."))
        assert len(outbox(store)) == 1

    scenario(test)


def test_a_reply_to_must_not_respond_is_refused_and_nothing_is_posted() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        with pytest.raises(ToolError, match="must_not_respond"):
            await tools["worker-1"].call("chat_send_message", reply(CHATTER, "Pizza!"))
        assert outbox(store) == []

    scenario(test)


def test_a_reply_to_an_event_another_agent_claimed_is_refused() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        holder = engine.state.claim_holder(ROLE, engine.clock.now())
        other = "worker-2" if holder == "worker-1" else "worker-1"
        with pytest.raises(ToolError):
            await tools[other].call("chat_send_message", reply(ROLE, "I'll take it"))
        assert outbox(store) == []
        done = await tools[holder].call("chat_send_message", reply(ROLE, "On it."))
        assert done["status"] == "queued"

    scenario(test)


def test_ack_only_takes_a_reaction_or_a_short_receipt_not_an_answer() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        with pytest.raises(ToolError, match="ack_only"):
            await tools["lead"].call("chat_send_message", reply(THANKS, "You're welcome! " * 20))
        await tools["lead"].call("chat_send_message", reply(THANKS, "Any time."))
        assert await disposition(store, THANKS, "lead") == "acknowledged"

    scenario(test)


def test_two_agents_racing_to_claim_one_event_give_one_winner() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        results = await asyncio.gather(
            tools["worker-1"].call("chat_claim", {"eventId": CHATTER}),
            tools["worker-2"].call("chat_claim", {"eventId": CHATTER}),
        )
        assert sorted(r["claimed"] for r in results) == [False, True]
        assert len({r["holder"] for r in results}) == 1

    scenario(test)


def test_defer_resolve_and_react_record_dispositions() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        await tools["lead"].call("chat_defer", {"eventId": DM, "reason": "after the deploy"})
        assert await disposition(store, DM, "lead") == "deferred"
        await tools["lead"].call("chat_resolve", {"eventId": DM})
        assert await disposition(store, DM, "lead") == "responded"
        result = await tools["lead"].call("chat_react", {"inReplyTo": THANKS, "signal": "agree"})
        assert result["status"] == "queued"
        assert await disposition(store, THANKS, "lead") == "acknowledged"

    scenario(test)


def test_reads_show_only_what_was_delivered_to_the_agent() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        lead = await tools["lead"].call("chat_list_events", {"limit": 50})
        worker = await tools["worker-1"].call("chat_list_events", {"limit": 50})
        assert DM in [e["eventId"] for e in lead["events"]]
        assert DM not in [e["eventId"] for e in worker["events"]]
        thread = await tools["worker-1"].call("chat_read_thread", {"conversation": "C0GEN"})
        assert [e["text"] for e in thread["events"]] == [
            "<!subteam^S0BACK> build is red",
            "lunch anyone?",
        ]
        with pytest.raises(ToolError, match="no event"):
            await tools["worker-1"].call("chat_defer", {"eventId": DM, "reason": "x"})

    scenario(test)


def test_a_read_returns_the_newest_events_that_fit_and_says_how_many_did_not() -> None:
    """Eight messages of 40,000 characters: five fit in `MAX_READ_CHARS`; the three older
    ones and the two short ones before them are counted, not shown."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        for n in range(8):
            text = f"{n} " + "x" * (MAX_READ_CHARS // 5 - 2)
            event = normalise(slack_body(slack_message(f"{BASE + 10 + n}.000100", text)))
            assert event is not None
            async with store.transaction():
                await engine.ingest(event)
        thread = await tools["worker-1"].call("chat_read_thread", {"conversation": "C0GEN"})
        assert [e["text"][:1] for e in thread["events"]] == ["3", "4", "5", "6", "7"]
        assert thread["omitted"] == 5 and "5 older events left out" in thread["note"]

    scenario(test)


def test_a_deleted_message_reads_back_without_its_text() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        event = normalise(
            slack_body(slack_delete(f"{BASE + 3}.000100", f"{BASE + 5}.000100", "lunch anyone?"))
        )
        assert event is not None
        async with store.transaction():
            await engine.ingest(event)
        thread = await tools["lead"].call("chat_read_thread", {"conversation": "C0GEN"})
        gone = [e for e in thread["events"] if e["eventId"] == CHATTER]
        assert gone == [{**gone[0], "text": "", "deleted": True}]

    scenario(test)


def test_an_obligation_names_exactly_one_recipient_and_chatter_names_none() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        two = {
            "target": {"conversation": "C0GEN"},
            "text": "please both look",
            "directedness": "to_me",
            "recipients": ["agent:worker-1", "agent:worker-2"],
        }
        with pytest.raises(ToolError, match="exactly one"):
            await tools["lead"].call("chat_send_message", two)
        chatter = {
            "target": {"conversation": "C0GEN"},
            "text": "fyi",
            "recipients": ["agent:worker-1"],
        }
        with pytest.raises(ToolError, match="mentions nobody"):
            await tools["lead"].call("chat_send_message", chatter)
        with pytest.raises(ToolError, match="invalid arguments"):
            await tools["lead"].call("chat_send_message", {"text": "no target"})
        assert outbox(store) == []

    scenario(test)


def test_the_tool_schemas_name_tools_with_underscores() -> None:
    names = [spec["name"] for spec in ChatTools.specs()]
    assert names == [
        "chat_list_events",
        "chat_read_thread",
        "chat_send_message",
        "chat_react",
        "chat_claim",
        "chat_defer",
        "chat_resolve",
        "chat_leave",
        "chat_edit_message",
        "chat_delete_message",
        "chat_read_file",
    ]
    assert all(
        spec["description"] and spec["inputSchema"]["type"] == "object"
        for spec in ChatTools.specs()
    )


def test_leaving_is_kept_across_a_restart(tmp_path: Any) -> None:
    path = str(tmp_path / "ledger.sqlite3")

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        assert await tools["worker-1"].call("chat_leave", {"conversation": "C0GEN"}) == {
            "left": "C0GEN"
        }
        await engine.rebuild()
        assert ("worker-1", "C0GEN") in engine.state.left

    scenario(test, path)


def test_an_agent_sending_too_fast_in_one_conversation_is_refused() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        for n in range(10):
            chatter = {"target": {"conversation": "C0GEN"}, "text": f"update {n}"}
            await tools["lead"].call("chat_send_message", chatter)
        with pytest.raises(ToolError, match="in the last minute"):
            await tools["lead"].call(
                "chat_send_message", {"target": {"conversation": "C0GEN"}, "text": "one more"}
            )
        assert len(outbox(store)) == 10

    scenario(test)


def test_every_tool_call_is_audited_without_message_text() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        await tools["lead"].call("chat_send_message", reply(DM, "secret plan"))
        with pytest.raises(ToolError):
            await tools["worker-1"].call("chat_send_message", reply(CHATTER, "pizza"))
        rows = store.db.execute("SELECT agent, what, outcome, detail FROM audit ORDER BY n")
        audited = [(a, w, o) for a, w, o, _ in rows]
        assert audited == [
            ("lead", "chat_send_message", "ok"),
            ("worker-1", "chat_send_message", "refused"),
        ]
        details = " ".join(r[0] for r in store.db.execute("SELECT detail FROM audit"))
        assert "secret plan" not in details and "[11 characters]" in details

    scenario(test)


def test_an_agent_edits_and_deletes_only_its_own_posted_messages() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        await tools["lead"].call("chat_send_message", reply(DM, "Green.", idempotencyKey="k-1"))
        with pytest.raises(ToolError, match="not been posted yet"):
            await tools["lead"].call("chat_edit_message", {"idempotencyKey": "k-1", "text": "Red."})
        async with store.transaction():
            await store.outbox_mark(
                "lead/k-1", "sent", "2026-01-01T00:00:11Z", {"messageId": "171.0"}
            )
        with pytest.raises(ToolError, match="you sent no message"):
            await tools["worker-1"].call("chat_delete_message", {"idempotencyKey": "k-1"})
        edited = await tools["lead"].call(
            "chat_edit_message", {"idempotencyKey": "k-1", "text": "Red."}
        )
        deleted = await tools["lead"].call("chat_delete_message", {"idempotencyKey": "k-1"})
        assert (edited["status"], deleted["status"]) == ("queued", "queued")
        rows = store.db.execute(
            "SELECT json_extract(action, '$.action'), json_extract(action, '$.messageId'), "
            "json_extract(action, '$.text') FROM outbox WHERE idempotency_key LIKE 'lead/k-1:%'"
        ).fetchall()
        assert rows == [("edit", "171.0", "Red."), ("delete", "171.0", None)]

    scenario(test)


def test_reactions_follow_the_reply_policy() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        with pytest.raises(ToolError, match="must_not_respond"):
            await tools["worker-1"].call("chat_react", {"inReplyTo": CHATTER, "signal": "unclear"})
        holder = engine.state.claim_holder(ROLE, engine.clock.now())
        other = "worker-2" if holder == "worker-1" else "worker-1"
        with pytest.raises(ToolError):
            await tools[other].call("chat_react", {"inReplyTo": ROLE, "signal": "unclear"})
        for signal in ("working", "claimed", "done", "unclear"):
            with pytest.raises(ToolError, match="ack_only"):
                await tools["lead"].call("chat_react", {"inReplyTo": THANKS, "signal": signal})
        assert outbox(store) == []
        assert await disposition(store, THANKS, "lead") is None
        await tools["lead"].call("chat_react", {"inReplyTo": THANKS, "signal": "seen"})
        assert await disposition(store, THANKS, "lead") == "acknowledged"

    scenario(test)


def test_a_reaction_alone_does_not_close_a_question() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        for signal in ("working", "claimed", "done"):
            result = await tools["lead"].call("chat_react", {"inReplyTo": DM, "signal": signal})
            assert result["status"] == "queued"
            assert await disposition(store, DM, "lead") is None, signal
        holder = engine.state.claim_holder(ROLE, engine.clock.now())
        assert holder is not None
        await tools[holder].call("chat_react", {"inReplyTo": ROLE, "signal": "done"})
        assert await disposition(store, ROLE, holder) is None
        await tools["lead"].call("chat_send_message", reply(DM, "It is green."))
        assert await disposition(store, DM, "lead") == "responded"

    scenario(test)


def test_the_deliverys_own_conversation_object_is_a_target() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        conversation = {"id": "D0LEAD", "kind": "dm", "threadId": None}
        for target in ({"conversation": conversation}, conversation):
            args = {"target": target, "text": "Green.", "inReplyTo": DM}
            result = await tools["lead"].call("chat_send_message", args)
            assert result["status"] in ("queued", "duplicate")
        ((action,),) = store.db.execute(
            "SELECT action FROM outbox WHERE json_extract(action, '$.action') = 'send'"
        ).fetchall()
        assert '"conversation":"D0LEAD"' in action

    scenario(test)


def test_a_turns_final_text_answers_only_what_is_still_owed() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        holder = engine.state.claim_holder(ROLE, engine.clock.now())
        assert holder is not None
        other = "worker-2" if holder == "worker-1" else "worker-1"
        # The role mention is the selected worker's to answer; chatter and thanks owe nothing.
        assert await tools[other].reply_with_text([ROLE, CHATTER], "Me too.") is None
        assert await tools["lead"].reply_with_text([CHATTER, THANKS], "Sure.") is None
        sent = await tools[holder].reply_with_text([ROLE], "  Looking at the build now.  ")
        assert sent is not None and sent["status"] == "queued"
        assert await disposition(store, ROLE, holder) == "responded"
        assert await tools[holder].reply_with_text([ROLE], "Again.") is None  # answered
        sent = await tools["lead"].reply_with_text([DM, THANKS], "It is green.")
        assert sent is not None
        ((text, in_reply_to),) = store.db.execute(
            "SELECT json_extract(action, '$.text'), json_extract(action, '$.inReplyTo') "
            "FROM outbox WHERE agent = 'lead' AND json_extract(action, '$.action') = 'send'"
        ).fetchall()
        assert (text, in_reply_to) == ("It is green.", DM)

    scenario(test)


def test_arguments_the_ledger_cannot_store_are_refused_and_audited_as_such() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        huge = {"target": {"conversation": "D0LEAD"}, "text": "hi", "inReplyTo": 2**70}
        with pytest.raises(ToolError, match="inReplyTo"):
            await tools["lead"].call("chat_send_message", huge)
        ((detail,),) = store.db.execute("SELECT detail FROM audit").fetchall()
        assert "not storable" in detail

    scenario(test)
