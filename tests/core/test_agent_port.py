"""The agent port on the engine: each guard refuses once, with the words the model reads, and
queues nothing; what is allowed is queued as a typed action and recorded as a disposition."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from agent_world import BASE, CHATTER, DM, ROLE, THANKS, port_scenario
from builders import HUMAN, HUMAN2, LEAD, slack_body, slack_message

from adapters.slack import normalise
from core.agent_port import EventFilter, MessageState, Outgoing, Queued, ToolCall
from core.clock import VirtualClock
from core.decision import Directedness, Disposition, Policy
from core.emission import Cancel, Emission
from core.engine import Engine
from core.engine_port import EnginePort
from core.errors import ToolError
from core.guards import derived_key
from core.post_files import PostFile
from core.signals import Signal
from core.sqlite_store import SQLiteStore


def outbox(store: SQLiteStore) -> list[tuple[str, str]]:
    """Every queued action but the host's own `seen` reactions: agent and key."""
    rows = store.db.execute(
        "SELECT agent, idempotency_key FROM outbox WHERE idempotency_key NOT LIKE '%:react:seen'"
    )
    return [(agent, key) for agent, key in rows]


async def disposition(store: SQLiteStore, event_id: str, agent: str) -> Disposition | None:
    for delivery in await store.deliveries(event_id):
        if delivery.decision.agent == agent:
            return delivery.disposition
    return None


def answer(event_id: str, text: str, **fields: Any) -> Outgoing:
    conversation = event_id.split(":")[2]
    return Outgoing(conversation=conversation, text=text, in_reply_to=event_id, **fields)


def others(engine: Engine) -> tuple[str, str]:
    """The worker holding the role mention's claim, and the other one."""
    holder = engine.state.claim_holder(ROLE, engine.clock.now())
    assert holder is not None
    return holder, "worker-2" if holder == "worker-1" else "worker-1"


@pytest.mark.parametrize(
    ("agent", "message", "refusal"),
    [
        ("worker-1", answer(CHATTER, "Pizza!"), "is must_not_respond for you"),
        ("lead", answer(THANKS, "You're welcome! " * 20), "ack_only; react, or send a short"),
        ("lead", answer(DM, "x", directedness=Directedness.TO_ME), "exactly one recipient"),
        ("lead", answer(DM, "x", recipients=("agent:worker-1",)), "mentions nobody"),
        (
            "lead",
            answer(DM, "x", directedness=Directedness.TO_ME, recipients=("agent:ghost",)),
            "unknown recipient 'agent:ghost'",
        ),
        ("worker-1", answer(DM, "x"), f"no event {DM!r} was delivered to you"),
        ("lead", Outgoing(conversation="C0NOWHERE", text="x"), "you have seen nothing"),
        (  # an answer to a DM posted in a channel the agent is in: the asker would never see it
            "lead",
            Outgoing(conversation=CHATTER.split(":")[2], text="x", in_reply_to=DM),
            f"{DM} was posted in .*; a reply to it goes there",
        ),
        (  # no platform could tell whom these are for: refused, not queued to fail later
            "lead",
            Outgoing(conversation=CHATTER.split(":")[2], text="x", visibility="ephemeral"),
            "a post marked ephemeral is for one person",
        ),
        (
            "lead",
            Outgoing(conversation=CHATTER.split(":")[2], text="x", visibility="dm"),
            "a post marked dm is for one person",
        ),
        (  # the asker would get nothing while their question counted as answered
            "lead",
            answer(
                CHATTER,
                "x",
                visibility="dm",
                directedness=Directedness.TO_ME,
                recipients=("user:U0ALICE",),
            ),
            f"a dm answer to {CHATTER} goes to its author, user:{HUMAN2}, not to user:U0ALICE",
        ),
        (  # a platform takes a thread's id on trust: on Discord it could name any channel
            "lead",
            Outgoing(conversation="C0GEN", text="x", thread="C0ADMINS"),
            "you have seen no thread or message 'C0ADMINS' in C0GEN",
        ),
        ("lead", Outgoing(conversation="D0LEAD", text=" \n\t"), "a message needs some text"),
        (  # Slack shows an ephemeral message to anyone named: in a DM, only its person
            "lead",
            Outgoing(
                conversation="D0LEAD",
                text="x",
                visibility="ephemeral",
                directedness=Directedness.TO_ME,
                recipients=("user:U0MALLORY",),
            ),
            "you have not met user:U0MALLORY in D0LEAD",
        ),
    ],
)
def test_a_refused_message_says_why_and_queues_nothing(
    agent: str, message: Outgoing, refusal: str
) -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        with pytest.raises(ToolError, match=refusal):
            await ports[agent].send(message)
        assert outbox(store) == []

    port_scenario(test)


def test_an_agent_leaves_only_a_conversation_it_has_seen() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        with pytest.raises(ToolError, match="you have seen nothing in conversation 'C0NOWHERE'"):
            await ports["lead"].leave("C0NOWHERE")
        assert await ports["lead"].leave("D0LEAD") == "D0LEAD"

    port_scenario(test)


def test_a_refused_message_counts_against_no_send_budget() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        bad = Outgoing(conversation="D0LEAD", text="x", recipients=("agent:worker-1",))
        for n in range(engine.workspace.settings.sends_per_minute + 1):
            with pytest.raises(ToolError, match="mentions nobody"):
                await ports["lead"].send(replace(bad, text=f"x{n}"))
        assert (await ports["lead"].send(Outgoing(conversation="D0LEAD", text="Green."))).new

    port_scenario(test)


def test_a_post_names_a_thread_it_was_shown_or_a_message_to_start_one_under() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        root = ROLE.rsplit(":", 1)[1]
        reply = slack_message(f"{BASE + 5}.000100", "still red", user=HUMAN2, thread_ts=root)
        async with store.transaction():
            await engine.ingest(normalise(slack_body(reply)))
        holder, _ = others(engine)
        in_thread = Outgoing(conversation="C0GEN", text="Looking.", thread=root)
        assert (await ports[holder].send(in_thread)).new
        chatter = CHATTER.rsplit(":", 1)[1]  # a message with no thread yet
        assert (await ports["lead"].send(replace(in_thread, thread=chatter))).new
        for unknown in (f"{BASE + 9}.000100", "C0GEN"):  # a channel is no thread of its own
            with pytest.raises(ToolError, match="you have seen no thread or message"):
                await ports["lead"].send(replace(in_thread, thread=unknown))

    port_scenario(test)


def test_a_dm_from_a_channel_goes_only_to_someone_met_there() -> None:
    """A platform opens a DM with anyone in the workspace: a message in a channel must not be
    able to have an agent write privately to people who never took part."""

    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        dm = Outgoing(
            conversation="C0GEN", text="Psst.", visibility="dm", directedness=Directedness.TO_ME
        )
        with pytest.raises(ToolError, match="you have not met user:U0MALLORY in C0GEN"):
            await ports["lead"].send(replace(dm, recipients=("user:U0MALLORY",)))
        named = slack_message(f"{BASE + 5}.000100", "<@U0CAROL> knows the deploy", user=HUMAN2)
        async with store.transaction():
            await engine.ingest(normalise(slack_body(named)))
        for person in (HUMAN2, "U0CAROL"):  # one who wrote there, one named there
            said = replace(dm, text=f"Psst, {person}.", recipients=(f"user:{person}",))
            assert (await ports["lead"].send(said)).new
        assert len(outbox(store)) == 2

    port_scenario(test)


def test_a_dm_post_in_the_dm_itself_needs_nobody_named() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        said = Outgoing(conversation="D0LEAD", text="Also: the deploy is green.", visibility="dm")
        key = (await ports["lead"].send(said)).key
        assert "person" not in outbox_record(store, key)

    port_scenario(test)


def test_the_host_names_the_person_a_private_post_is_for() -> None:
    """The asker of the message it answers, else its `user:` recipient: a platform only
    delivers to the person named (`Post.person`), and never chooses one itself."""

    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        holder, _ = others(engine)
        worker = ports[holder]
        private = answer(ROLE, "Psst.", visibility="dm")
        assert outbox_record(store, (await worker.send(private)).key)["person"] == HUMAN
        lead = ports["lead"]
        named = Outgoing(
            conversation="C0GEN",
            text="Psst, Bob.",
            visibility="dm",
            directedness=Directedness.TO_ME,
            recipients=(f"user:{HUMAN2}",),
        )
        assert outbox_record(store, (await lead.send(named)).key)["person"] == HUMAN2
        told = replace(named, text="Only you see this.", visibility="ephemeral")
        assert outbox_record(store, (await lead.send(told)).key)["person"] == HUMAN2

    port_scenario(test)


def test_an_event_another_agent_claimed_is_out_of_bounds_for_messages_and_reactions() -> None:
    """The role mention was selected for one worker; once that claim has expired the other
    claims it, and the first, whose policy still lets it answer, must stay out."""

    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        selected, other = others(engine)
        assert isinstance(engine.clock, VirtualClock)
        engine.clock.advance(timedelta(days=1))
        assert (await ports[other].claim(ROLE)).granted
        stay_out = f"refused: agent:{other} claimed {ROLE}; stay out"
        with pytest.raises(ToolError, match=stay_out):
            await ports[selected].send(answer(ROLE, "Mine."))
        with pytest.raises(ToolError, match=stay_out):
            await ports[selected].react(ROLE, Signal.WORKING)
        assert outbox(store) == []
        assert await ports[selected].owed([ROLE]) == []

    port_scenario(test)


def test_a_second_different_answer_is_refused_but_a_retry_is_a_duplicate() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        first = await ports["lead"].send(answer(DM, "Green."))
        again = await ports["lead"].send(answer(DM, "Green."))
        assert first == Queued(first.key, True) and again == Queued(first.key, False)
        with pytest.raises(ToolError, match=f"you already answered {DM}"):
            await ports["lead"].send(answer(DM, "Red."))
        assert await disposition(store, DM, "lead") is Disposition.RESPONDED
        assert len(outbox(store)) == 1

    port_scenario(test)


def test_no_agent_can_take_the_key_another_agents_answer_will_have() -> None:
    """A key an agent chooses is its own (`lead/<key>`): the lead, given the key the worker's
    answer will have (derived from the question and the answer's words), cannot post under it
    first and so keep that answer from ever being posted."""

    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        holder, _ = others(engine)
        squat = derived_key(holder, "On it.", ROLE)
        place = ROLE.split(":")[2]
        taken = await ports["lead"].send(Outgoing(conversation=place, text="x", key=squat))
        assert await ports[holder].send(answer(ROLE, "On it.")) == Queued(squat, True)
        assert await disposition(store, ROLE, holder) is Disposition.RESPONDED
        assert taken == Queued(f"lead/{squat}", True)

    port_scenario(test)


def test_ack_only_takes_only_an_acknowledging_reaction() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        with pytest.raises(ToolError, match="acknowledge it with seen or agree, not done"):
            await ports["lead"].react(THANKS, Signal.DONE)
        assert await disposition(store, THANKS, "lead") is None
        await ports["lead"].react(THANKS, Signal.AGREE)
        assert await disposition(store, THANKS, "lead") is Disposition.ACKNOWLEDGED

    port_scenario(test)


def test_the_send_budget_is_per_conversation_and_refills_after_a_minute() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        for n in range(10):
            await ports["lead"].send(Outgoing(conversation="C0GEN", text=f"update {n}"))
        with pytest.raises(ToolError, match="you sent 10 messages in C0GEN in the last minute"):
            await ports["lead"].send(Outgoing(conversation="C0GEN", text="one more"))
        await ports["lead"].send(answer(DM, "Another conversation is fine."))
        assert isinstance(engine.clock, VirtualClock)
        engine.clock.advance(timedelta(minutes=1))
        assert (await ports["lead"].send(Outgoing(conversation="C0GEN", text="later"))).new

    port_scenario(test)


def test_a_reaction_to_a_question_records_nothing_but_a_message_answers_it() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        for signal in (Signal.WORKING, Signal.CLAIMED, Signal.DONE):
            assert (await ports["lead"].react(DM, signal)).new
        assert await disposition(store, DM, "lead") is None
        await ports["lead"].send(answer(DM, "It is green."))
        assert await disposition(store, DM, "lead") is Disposition.RESPONDED

    port_scenario(test)


def test_a_claim_tells_the_harnesses_of_the_agents_it_took_the_event_from() -> None:
    """The claim on the role mention expired and the other worker took it: the one first
    picked is told, so a turn still at work on it drops it."""

    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        selected, other = others(engine)
        told: list[Emission] = []

        async def tell(emissions: list[Emission]) -> None:
            told.extend(emissions)

        assert isinstance(engine.clock, VirtualClock)
        engine.clock.advance(timedelta(days=1))
        assert (await EnginePort(engine, other, tell=tell).claim(ROLE)).granted
        assert told == [Cancel(selected, ROLE, "claimed_by_other")]

    port_scenario(test)


def test_claim_defer_and_resolve_record_their_dispositions() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        claimed = await ports["worker-1"].claim(CHATTER)
        lost = await ports["worker-2"].claim(CHATTER)
        assert (claimed.granted, lost.granted, lost.holder) == (True, False, "worker-1")
        assert await disposition(store, CHATTER, "worker-1") is Disposition.CLAIMED
        assert await ports["lead"].defer(DM, "after the deploy") is Disposition.DEFERRED
        assert await ports["lead"].resolve(DM) is Disposition.RESPONDED
        assert await ports["worker-1"].leave("C0GEN", "171.0") == "C0GEN/171.0"

    port_scenario(test)


def test_no_agent_can_claim_what_was_asked_of_another_by_name() -> None:
    """The lead must answer a question put to it: a worker that claimed it from its mailbox
    would take it from the lead (whose answer the claim refuses) and answer in its place."""

    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        asked = slack_message(f"{BASE + 5}.000100", f"<@{LEAD}> is the deploy green?")
        async with store.transaction():
            await engine.ingest(normalise(slack_body(asked)))
        event_id = f"slack:T0LOCAL:C0GEN:{BASE + 5}.000100"
        with pytest.raises(ToolError, match="is addressed to agent:lead, who must answer it"):
            await ports["worker-1"].claim(event_id)
        assert await disposition(store, event_id, "worker-1") is None
        assert (await ports["lead"].claim(event_id)).granted
        assert (await ports["lead"].send(answer(event_id, "Green."))).new

    port_scenario(test)


def test_only_the_agents_own_landed_message_can_be_edited_or_deleted() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        await ports["lead"].send(answer(DM, "Green.", key="k-1"))
        assert await ports["lead"].message("k-1") == MessageState("pending", None)
        assert await ports["worker-1"].message("k-1") is None
        with pytest.raises(ToolError, match="'k-1' has not been posted yet"):
            await ports["lead"].edit("k-1", "Red.")
        async with store.transaction():
            await store.outbox_mark(
                "lead/k-1", "sent", "2026-01-01T00:00:11Z", {"messageId": "171.0"}
            )
        with pytest.raises(ToolError, match="you sent no message with idempotency key 'k-1'"):
            await ports["worker-1"].delete("k-1")
        draft = await ports["lead"].edit("k-1", "Re", draft=1)
        edit = await ports["lead"].edit("k-1", "Red.")
        delete = await ports["lead"].delete("k-1")
        assert draft.key == "lead/k-1:draft:1" and edit.key.startswith("lead/k-1:edit:")
        assert delete == Queued("lead/k-1:delete", True)
        rows = store.db.execute(
            "SELECT json_extract(action, '$.action'), json_extract(action, '$.draft'), "
            "json_extract(action, '$.messageId') FROM outbox "
            "WHERE idempotency_key LIKE 'lead/k-1:%' ORDER BY rowid"
        ).fetchall()
        assert rows == [("edit", 1, "171.0"), ("edit", 0, "171.0"), ("delete", None, "171.0")]

    port_scenario(test)


def test_an_answer_deleted_leaves_its_question_ignored_and_open_to_a_new_answer() -> None:
    """Deleting a wrong answer leaves the asker with nothing: the agent may answer again, and
    the question, no longer answered, is not chased either (the agent chose to withdraw)."""

    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        first = await ports["lead"].send(answer(DM, "It is red.", key="a1"))
        landed = '{"messageId": "1767225601.000200", "conversation": "D0LEAD"}'
        store.db.execute(
            "UPDATE outbox SET status = 'sent', result = ? WHERE idempotency_key = ?",
            (landed, first.key),
        )
        with pytest.raises(ToolError, match="you already answered"):
            await ports["lead"].send(answer(DM, "It is green."))
        await ports["lead"].delete("a1")
        assert await disposition(store, DM, "lead") is Disposition.IGNORED
        assert await ports["lead"].owed([DM]) == []
        assert (await ports["lead"].send(answer(DM, "It is green."))).new
        assert await disposition(store, DM, "lead") is Disposition.RESPONDED

    port_scenario(test)


def test_a_turns_final_text_answers_the_last_owed_event_and_the_others_in_its_place() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        lead = ports["lead"]
        assert await lead.owed([DM, THANKS, CHATTER]) == [DM]
        assert await lead.final_reply([THANKS, CHATTER], "Sure.") is None
        assert await lead.final_reply([DM], "   ") is None
        reply = await lead.final_reply([DM], "  It is green. ")
        assert reply == Outgoing(
            conversation="D0LEAD", text="It is green.", in_reply_to=DM, also_answers=()
        )
        holder, _ = others(engine)
        assert await ports[holder].owed([ROLE]) == [ROLE]

    port_scenario(test)


def test_also_answers_settles_the_other_questions_the_message_answers() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        lead = ports["lead"]
        await lead.send(answer(THANKS, "Noted.", also_answers=(DM,)))
        assert await disposition(store, THANKS, "lead") is Disposition.ACKNOWLEDGED
        assert await disposition(store, DM, "lead") is Disposition.RESPONDED

    port_scenario(test)


def test_a_failed_turn_marks_only_what_the_agent_left_unsettled() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        lead = ports["lead"]
        await lead.defer(DM, "later")
        assert await lead.unsettled([DM, THANKS]) == [THANKS]
        assert await lead.fail([DM, THANKS], "the model is down") == [THANKS]
        assert await disposition(store, THANKS, "lead") is Disposition.FAILED
        assert await lead.unsettled([DM, THANKS]) == []

    port_scenario(test)


def test_reads_show_only_what_was_delivered_with_the_hosts_decision() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        listed = await ports["lead"].list_events(EventFilter(policy=Policy.MUST_RESPOND))
        assert [e.event_id for e in listed] == [DM]
        assert listed[0].text == "can you check the deploy?"
        worker = await ports["worker-1"].list_events(EventFilter(limit=50))
        assert DM not in [e.event_id for e in worker]
        said = await ports["worker-1"].read_thread("C0GEN")
        assert [e.event_id for e in said] == [ROLE, CHATTER]

    port_scenario(test)


def test_a_tool_call_is_audited_redacted_with_text_as_its_length() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        token = "xoxb-" + "1" * 12 + "-" + "2" * 12 + "-" + "a" * 24
        arguments = {"text": "secret plan", "note": f"token {token}"}
        await ports["lead"].record_call(ToolCall("chat_defer", arguments, "ok", {"n": 1}))
        ((what, outcome, detail),) = store.db.execute(
            "SELECT what, outcome, detail FROM audit"
        ).fetchall()
        shown = json.loads(detail)
        assert (what, outcome) == ("chat_defer", "ok")
        assert shown["arguments"]["text"] == "[11 characters]"
        assert token not in detail and shown["result"] == {"n": 1}

    port_scenario(test)


def test_the_port_marks_its_agents_harness_up_and_down() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        ports["lead"].mark_unavailable()
        assert "lead" in engine.unavailable
        ports["lead"].mark_available()
        assert "lead" not in engine.unavailable
        assert ports["lead"].clock is engine.clock and ports["lead"].agent == "lead"

    port_scenario(test)


def outbox_record(store: SQLiteStore, key: str) -> dict[str, Any]:
    ((action,),) = store.db.execute(
        "SELECT action FROM outbox WHERE idempotency_key = ?", (key,)
    ).fetchall()
    record: dict[str, Any] = json.loads(action)
    return record


def test_a_message_s_files_are_queued_with_safe_names_and_their_secrets_redacted() -> None:
    token = "xoxb-" + "1" * 12 + "-" + "2" * 12 + "-" + "a" * 24
    files = (PostFile("../logs/deploy.log", f"ok\ntoken {token}\n"),)

    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        with pytest.raises(ToolError, match="ephemeral message cannot carry files"):
            await ports["lead"].send(answer(DM, "x", files=files, visibility="ephemeral"))
        sent = await ports["lead"].send(answer(DM, "the log", files=files))
        record = outbox_record(store, sent.key)
        assert [f["name"] for f in record["files"]] == ["deploy.log"]
        assert token not in json.dumps(record)
        assert record["files"][0]["content"].startswith("ok\ntoken [redacted")

    port_scenario(test)


def test_an_answer_longer_than_the_platform_s_parts_is_queued_as_a_file_and_a_summary() -> None:
    long = "In short: the deploy is fine.\n\n" + "more detail " * 2_500

    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        platform = (await engine.event(DM)).platform  # type: ignore[union-attr]
        port = EnginePort(engine, "lead", limits={platform: 2_500})
        assert port.answer_parts == 3
        sent = await port.send(answer(DM, long))
        record = outbox_record(store, sent.key)
        assert record["text"].startswith("In short: the deploy is fine.\n\n(The full answer")
        assert record["files"] == [{"name": "answer.md", "content": long.strip()}]
        short = await port.send(Outgoing(conversation=DM.split(":")[2], text="x" * 7_000))
        assert "files" not in outbox_record(store, short.key)

    port_scenario(test)


def test_a_file_s_content_is_audited_as_its_length() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        arguments = {"text": "x", "files": [{"name": "a.txt", "content": "secret plan"}]}
        await ports["lead"].record_call(ToolCall("chat_send_message", arguments, "ok", {}))
        ((detail,),) = store.db.execute("SELECT detail FROM audit").fetchall()
        assert json.loads(detail)["arguments"]["files"] == [
            {"name": "a.txt", "content": "[11 characters]"}
        ]

    port_scenario(test)


def test_a_conversation_reads_without_its_threads_and_a_thread_from_its_root() -> None:
    """A channel's reading is its own lines, as the platform's history shows them; a thread's
    starts with the message it hangs off, the question its replies are about."""

    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        root = ROLE.rsplit(":", 1)[1]
        reply = slack_message(f"{BASE + 5}.000100", "still red", user=HUMAN2, thread_ts=root)
        async with store.transaction():
            await engine.ingest(normalise(slack_body(reply)))
        in_thread = f"slack:T0LOCAL:C0GEN:{BASE + 5}.000100"
        said = await ports["worker-1"].read_thread("C0GEN")
        assert [e.event_id for e in said] == [ROLE, CHATTER]
        thread = await ports["worker-1"].read_thread("C0GEN", thread=root)
        assert [e.event_id for e in thread] == [ROLE, in_thread]
        latest = await ports["worker-1"].read_thread("C0GEN", thread=root, limit=1)
        assert [e.event_id for e in latest] == [ROLE]

    port_scenario(test)
