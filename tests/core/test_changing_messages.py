"""Edits, deletes, fragments, reactions and loops, as the host sees them arrive."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from builders import (
    HUMAN,
    HUMAN2,
    LEAD,
    W1,
    W2,
    axes,
    delivered,
    is_membership,
    line,
    local_workspace,
    run,
    slack_body,
    slack_delete,
    slack_edit,
    slack_join,
    slack_message,
    slack_reaction,
)

from adapters.slack import normalise
from c2a.records import record_of
from core.clock import VirtualClock, parse_time
from core.decision import Disposition
from core.emission import Cancel, Delivery
from core.engine import WORK_ENDED, Engine
from core.engine_port import EnginePort
from core.notices import loop_stopped
from core.sqlite_store import SQLiteStore

AGENTS = ("lead", "worker-1", "worker-2")
BASE = 1767225600


def at(second: float) -> str:
    whole = int(second)
    return f"2026-01-01T00:{whole // 60:02d}:{whole % 60:02d}Z"


def ts(second: int) -> str:
    return f"{BASE + second}.000100"


def joined() -> list[str]:
    return [line(at(0), "slack", slack_body(slack_join(u))) for u in (LEAD, W1, W2)]


def say(second: int, text: str, *, user: str = HUMAN, thread: int | None = None) -> str:
    thread_ts = ts(thread) if thread is not None else None
    event = slack_message(ts(second), text, user=user, thread_ts=thread_ts)
    return line(at(second), "slack", slack_body(event))


def rpcs(records: list[dict[str, Any]], agent: str) -> list[dict[str, Any]]:
    return [
        r["rpc"]
        for r in records
        if r["agent"] == agent and "rpc" in r and not is_membership(r["rpc"])
    ]


def test_an_edit_before_injection_supersedes_and_cancels_the_first_version() -> None:
    lines = joined() + [
        say(1, f"<@{LEAD}> can you chekc the deploy"),
        line(
            at(2),
            "slack",
            slack_body(slack_edit(ts(1), ts(2), "x", f"<@{LEAD}> can you check the deploy")),
        ),
    ]
    records, _, _ = run(lines)
    lead = rpcs(records, "lead")
    first, cancel, edit = lead
    assert cancel == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"eventId": first["params"]["eventId"], "reason": "superseded"},
    }
    params = edit["params"]
    assert params["eventId"] == f"slack:T0LOCAL:C0GEN:{ts(1)}~{ts(2)}"
    assert params["supersedes"] == first["params"]["eventId"]
    assert params["source"]["messageId"] == ts(1)
    assert params["attention"]["reason"] == "edited_before_injection"
    assert params["content"] == [{"type": "text", "text": f"<@{LEAD}> can you check the deploy"}]


def test_an_edit_that_newly_mentions_an_agent_makes_it_must_respond() -> None:
    lines = joined() + [
        say(1, "can someone check the deploy"),
        line(
            at(5),
            "slack",
            slack_body(slack_edit(ts(1), ts(5), "x", f"<@{W1}> can you check the deploy")),
        ),
    ]
    records, _, _ = run(lines)
    assert axes(delivered(records)["worker-1"][-1]) == ("to_me", "must_respond", "buffered")


async def seated() -> tuple[Engine, SQLiteStore, VirtualClock]:
    """An engine on an open ledger in memory, every agent a member of the channel."""
    clock = VirtualClock(parse_time(at(1)))
    store = SQLiteStore()
    await store.open()
    engine = Engine(local_workspace(), store, clock)
    for user in (LEAD, W1, W2):
        await engine.ingest(normalise(slack_body(slack_join(user))))
    return engine, store, clock


def test_half_of_a_utf16_pair_in_a_message_is_stored_and_delivered_as_a_replacement() -> None:
    # Only a JSON \\u escape in a payload makes one; before, the ledger's write failed.
    async def scenario() -> str:
        engine, store, _ = await seated()
        asked = normalise(slack_body(slack_message(ts(1), f"<@{LEAD}> is \ud800 fine?")))
        assert asked is not None
        outcome = await engine.ingest(asked)
        (delivery,) = [
            e for e in outcome.emissions if isinstance(e, Delivery) and e.decision.agent == "lead"
        ]
        stored = await engine.event(asked.event_id)
        await store.close()
        assert stored is not None and delivery.event.text == stored.text
        return stored.text

    assert asyncio.run(scenario()) == f"<@{LEAD}> is \ufffd fine?"


def test_an_edit_after_the_agent_answered_is_may_respond() -> None:
    async def scenario() -> list[dict[str, Any]]:
        engine, _, _ = await seated()
        original = normalise(slack_body(slack_message(ts(1), f"<@{LEAD}> check the deploy")))
        assert original is not None
        await engine.ingest(original)
        await engine.dispose("lead", original.event_id, Disposition.RESPONDED)
        edited = normalise(
            slack_body(slack_edit(ts(1), ts(9), "x", f"<@{LEAD}> check the deploy and the DB"))
        )
        assert edited is not None
        outcome = await engine.ingest(edited)
        return [record_of(e).body for e in outcome.emissions if e.agent == "lead"]

    cancel, edit = asyncio.run(scenario())
    assert cancel["params"]["reason"] == "superseded"
    assert edit["params"]["attention"]["policy"] == "may_respond"
    assert edit["params"]["attention"]["reason"] == "edited_after_response"


def test_a_link_unfurl_is_not_an_edit() -> None:
    lines = joined() + [
        say(1, f"<@{LEAD}> see https://example.com"),
        line(at(2), "slack", slack_body(slack_edit(ts(1), ts(2), "same", "same"))),
    ]
    records, stats, _ = run(lines)
    assert stats.ignored == 1
    assert len(rpcs(records, "lead")) == 1


def test_a_delete_cancels_every_delivery_and_leaves_a_tombstone(tmp_path: Any) -> None:
    secret = "the staging password is hunter2"
    lines = joined() + [
        say(1, f"<@{LEAD}> {secret}"),
        line(at(2), "slack", slack_body(slack_delete(ts(1), ts(2), secret))),
    ]
    path = str(tmp_path / "ledger.sqlite3")
    records, _, _ = run(lines, store=path)
    cancels = [r for r in records if r.get("rpc", {}).get("method") == "notifications/cancelled"]
    assert {(r["agent"], r["rpc"]["params"]["reason"]) for r in cancels} == {
        ("lead", "deleted"),
        ("worker-1", "deleted"),
        ("worker-2", "deleted"),
    }
    import sqlite3

    rows = sqlite3.connect(path).execute("SELECT data FROM events").fetchall()
    assert all("hunter2" not in row[0] for row in rows)


def test_an_edit_that_comes_after_the_delete_is_decided_for_nobody_and_kept_blank(
    tmp_path: Any,
) -> None:
    """A platform's edit arriving late (a retry, or a page that edits what it deleted): its
    words are erased as the deleted message's were, and no agent is told of them."""
    lines = joined() + [
        say(1, f"<@{LEAD}> the password is hunter2"),
        line(at(2), "slack", slack_body(slack_delete(ts(1), ts(2), "x"))),
        line(at(3), "slack", slack_body(slack_edit(ts(1), ts(3), "x", f"<@{LEAD}> it is hunter3"))),
    ]
    path = str(tmp_path / "ledger.sqlite3")
    records, _, _ = run(lines, store=path)
    told = [r["rpc"]["params"]["eventId"] for r in records if "rpc" in r]
    assert not any(ts(3) in event_id for event_id in told)
    import sqlite3

    rows = sqlite3.connect(path).execute("SELECT data FROM events").fetchall()
    assert all("hunter" not in row[0] for row in rows)


def test_a_deleted_question_is_owed_by_nobody_and_no_reminder_chases_it() -> None:
    async def scenario() -> None:
        engine, store, clock = await seated()
        asked = normalise(slack_body(slack_message(ts(1), f"<@{LEAD}> what is 2+2?")))
        edited = normalise(slack_body(slack_edit(ts(1), ts(2), "x", f"<@{LEAD}> what is 2+3?")))
        other = normalise(slack_body(slack_message(ts(3), f"<@{LEAD}> and the deploy?")))
        assert asked is not None and edited is not None and other is not None
        for event in (asked, edited, other):
            await engine.ingest(event)
            await store.mark_delivered(event.event_id, "lead", 1)
        port = EnginePort(engine, "lead")
        versions = [asked.event_id, edited.event_id]
        # The edit replaced the words before anyone answered: only its version is owed.
        assert await port.owed([*versions, other.event_id]) == [edited.event_id, other.event_id]
        assert engine.state.busy["lead"] == 2
        assert await port.final_reply([asked.event_id], "4") is None  # a turn on the old words
        now = await port.final_reply(versions, "5")
        assert now is not None and now.in_reply_to == edited.event_id
        await engine.ingest(normalise(slack_body(slack_delete(ts(1), ts(4), "x"))))
        # Every version, for every agent told of it, is settled as superseded (by the edit, then
        # by the delete).
        for event_id, why in zip(versions, ("edited", "deleted"), strict=True):
            settled = {d.decision.agent: d.disposition for d in await store.deliveries(event_id)}
            assert settled == dict.fromkeys(AGENTS, Disposition.SUPERSEDED)
            reasons = store.db.execute(
                "SELECT DISTINCT disposition_reason FROM deliveries WHERE event_id = ?",
                (event_id,),
            ).fetchall()
            assert reasons == [(why,)]
        assert await port.owed([*versions, other.event_id]) == [other.event_id]
        reply = await port.final_reply(versions, "4")
        assert reply is None  # a turn that was answering it posts nothing
        assert engine.state.busy["lead"] == 1
        # Past the deadline only the question still standing is chased.
        clock.advance(timedelta(minutes=6))
        async with store.transaction():
            reminded = [e for e in await engine.sweep() if isinstance(e, Delivery)]
        assert [d.decision.reason for d in reminded] == ["reminder"]
        assert reminded[0].event.text == "<@U0LEAD> and the deploy?"
        # Folded again from the ledger, the same obligations.
        restarted = Engine(engine.workspace, store, clock)
        await restarted.rebuild()
        assert restarted.state.busy["lead"] == 1
        await store.close()

    asyncio.run(scenario())


def test_told_to_stop_an_agent_drops_what_it_owes_in_that_conversation_only() -> None:
    async def scenario() -> None:
        engine, store, _ = await seated()
        here = normalise(slack_body(slack_message(ts(1), f"<@{LEAD}> summarise the logs")))
        dm = slack_message(ts(2), "and the deploy?", channel="D0LEAD", channel_type="im")
        there = normalise(slack_body(dm, via="lead"))
        assert here is not None and there is not None
        for event in (here, there):
            await engine.ingest(event)
        assert engine.owed("lead") == [here.event_id, there.event_id]
        stop = normalise(slack_body(slack_message(ts(3), f"<@{LEAD}> stop")))
        assert stop is not None
        outcome = await engine.ingest(stop)
        cancels = [e for e in outcome.emissions if isinstance(e, Cancel)]
        assert cancels == [Cancel("lead", here.event_id, WORK_ENDED)]
        (ended,) = [d for d in await store.deliveries(here.event_id) if d.decision.agent == "lead"]
        assert ended.disposition is Disposition.IGNORED
        (why,) = store.db.execute(
            "SELECT disposition_reason FROM deliveries WHERE event_id = ? AND agent = 'lead'",
            (here.event_id,),
        ).fetchone()
        assert why == f"stopped by {HUMAN}"
        assert engine.owed("lead") == [there.event_id]  # the DM is another conversation
        await store.close()

    asyncio.run(scenario())


def test_fragments_after_a_mention_continue_it() -> None:
    lines = joined() + [
        say(1, f"<@{LEAD}> can you"),
        say(3, "check the deploy logs"),
        say(4, "for the api service"),
    ]
    records, _, _ = run(lines)
    lead = delivered(records)["lead"]
    first = lead[0]["eventId"]
    assert [axes(p) for p in lead] == [("to_me", "must_respond", "buffered")] * 3
    assert [p.get("continues") for p in lead] == [None, first, first]
    assert [p["attention"]["reason"] for p in lead[1:]] == ["continuation", "continuation"]
    assert axes(delivered(records)["worker-1"][1]) == (
        "ambient",
        "must_not_respond",
        "tool_mailbox",
    )


@pytest.mark.parametrize("answering", ["the turn", "the last fragment"])
def test_once_an_agent_has_answered_the_person_s_next_line_is_a_follow_up_it_may_take(
    answering: str,
) -> None:
    """C2A merges the fragments that come before an answer. After the lead's answer (to the
    turn, or to its last fragment alone), ana's next line within the merge window is no part of
    the question it had to answer: her partner's line, which it may take up; a thanks is still
    a thanks to it."""

    async def scenario() -> None:
        engine, store, clock = await seated()
        asked = normalise(slack_body(slack_message(ts(1), f"<@{LEAD}> can you")))
        more = normalise(slack_body(slack_message(ts(3), "check the deploy logs")))
        assert asked is not None and more is not None
        for event in (asked, more):
            await engine.ingest(event)
        port = EnginePort(engine, "lead")
        answer = await port.final_reply([asked.event_id, more.event_id], "The logs are clean.")
        assert answer is not None and answer.also_answers == (asked.event_id,)
        await port.send(answer if answering == "the turn" else replace(answer, also_answers=()))
        decided = []
        for second, text in ((12, "hey, lunch at noon?"), (14, "thanks!")):
            clock.advance(timedelta(seconds=2))
            event = normalise(slack_body(slack_message(ts(second), text)))
            assert event is not None
            outcome = await engine.ingest(event)
            (lead,) = [
                e.decision
                for e in outcome.emissions
                if isinstance(e, Delivery) and e.decision.agent == "lead"
            ]
            decided.append(
                (lead.directedness.value, lead.policy.value, lead.reason, lead.continues)
            )
        assert decided == [
            ("to_me_likely", "may_respond", "conversation_partner", None),
            ("to_me", "ack_only", "thanks", None),
        ]
        await store.close()

    asyncio.run(scenario())


def test_a_follow_up_under_a_question_an_agent_answered_is_that_agents() -> None:
    # The answer went beside the question (a reply in the channel, as the web chat posts it),
    # and the person asks more in a thread under their question: before, no agent followed
    # that thread and the follow-up was chatter for all.
    async def scenario() -> list[dict[str, tuple[str, str]]]:
        engine, store, _ = await seated()

        async def decided(event: Any) -> dict[str, tuple[str, str]]:
            outcome = await engine.ingest(event)
            return {
                e.decision.agent: (e.decision.policy.value, e.decision.reason)
                for e in outcome.emissions
                if isinstance(e, Delivery)
            }

        asked = normalise(slack_body(slack_message(ts(1), f"<@{W1}> the capital of Spain?")))
        assert asked is not None
        await engine.ingest(asked)
        assert await engine.dispose("worker-1", asked.event_id, Disposition.RESPONDED)
        under = [
            normalise(slack_body(slack_message(ts(s), text, user=who, thread_ts=ts(1))))
            for s, text, who in ((20, "and of Portugal?", HUMAN), (40, "Lisbon, I think", HUMAN2))
        ]
        found = [await decided(event) for event in under]
        await store.close()
        return found

    follow_up, joined_in = asyncio.run(scenario())
    assert follow_up["worker-1"] == ("must_respond", "direct_thread_question")
    assert follow_up["lead"][0] == follow_up["worker-2"][0] == "must_not_respond"
    # Someone else joins the thread: the agent still follows it, no longer owing each line.
    assert joined_in["worker-1"] == ("may_respond", "thread_participant")


def test_a_fragment_after_the_merge_window_is_not_a_continuation() -> None:
    lines = joined() + [say(1, f"<@{LEAD}> can you"), say(45, "anyway, lunch?")]
    records, _, _ = run(lines)
    assert axes(delivered(records)["lead"][-1]) == ("ambient", "must_not_respond", "tool_mailbox")


def test_a_message_asking_the_room_does_not_continue_a_mention() -> None:
    for text in ("lunch anyone?", "does anybody know?", "Who is around", "hi everyone"):
        lines = joined() + [say(1, f"<@{LEAD}> what's the deploy status?"), say(3, text)]
        records, _, _ = run(lines)
        lead = delivered(records)["lead"]
        assert axes(lead[-1]) == ("ambient", "must_not_respond", "tool_mailbox"), text
        assert "continues" not in lead[-1]


def test_a_thanks_right_after_a_question_is_a_thanks_not_more_of_the_question() -> None:
    lines = joined() + [say(1, f"<@{LEAD}> what's the deploy status?"), say(8, "thanks!")]
    records, _, _ = run(lines)
    lead = delivered(records)["lead"]
    assert axes(lead[-1]) == ("to_me", "ack_only", "notify")
    assert lead[-1]["attention"]["reason"] == "thanks"


def test_a_fragment_that_addresses_someone_else_is_not_a_continuation() -> None:
    lines = joined() + [say(1, f"<@{LEAD}> can you"), say(3, f"<@{W1}> and you too?")]
    records, _, _ = run(lines)
    assert axes(delivered(records)["lead"][-1])[0] == "to_other"


def test_a_bot_loop_is_cut_after_four_rounds_and_escalated_once() -> None:
    lines = joined()
    for n in range(7):
        author, other = (LEAD, W1) if n % 2 == 0 else (W1, LEAD)
        lines.append(say(10 + n, f"<@{other}> what do you think?", user=author))
    records, _, _ = run(lines)
    worker = [
        p["attention"]["reason"]
        for p in delivered(records)["worker-1"]
        if p["author"].get("agentId") == "lead"
    ]
    assert worker == ["direct_mention", "direct_mention", "loop_limit", "loop_limit"]
    escalations = [r for r in records if "escalation" in r]
    assert len(escalations) == 1 and escalations[0]["agent"] == "lead"
    # the people there are told why the agents went quiet, by the agent that hit the limit
    (notice,) = [r for r in records if r.get("outbound", {}).get("text") == loop_stopped(4)]
    assert notice["agent"] == "lead" and notice["outbound"]["conversation"] == "C0GEN"


def test_a_human_message_resets_the_loop_count() -> None:
    lines = joined()
    for n in range(4):
        author, other = (LEAD, W1) if n % 2 == 0 else (W1, LEAD)
        lines.append(say(10 + n, f"<@{other}> and now?", user=author))
    lines.append(say(20, "ok bots, carry on"))
    lines.append(say(21, f"<@{W1}> one more idea", user=LEAD))
    records, _, _ = run(lines)
    assert delivered(records)["worker-1"][-1]["attention"]["reason"] == "direct_mention"


def test_an_agent_asked_to_leave_stays_quiet_until_mentioned_again() -> None:
    lines = joined() + [
        say(1, f"<@{LEAD}> please leave this channel"),
        say(30, "so, about that deploy"),
        say(31, "any thoughts on the deploy?", thread=30),
        say(90, f"<@{LEAD}> come back, we need you"),
    ]
    records, _, _ = run(lines)
    lead = delivered(records)["lead"]
    assert axes(lead[0]) == ("to_me", "ack_only", "notify")
    assert lead[0]["attention"]["reason"] == "leave_requested"
    assert axes(lead[-1]) == ("to_me", "must_respond", "buffered")


def test_a_reaction_on_the_agents_message_is_a_signal_to_it() -> None:
    lines = joined() + [
        say(1, "should I deploy now?", user=LEAD),
        line(at(2), "slack", slack_body(slack_reaction(ts(1), "+1::skin-tone-3", item_user=LEAD))),
        line(
            at(3),
            "slack",
            slack_body(
                slack_reaction(
                    ts(1), "white_check_mark", item_user=LEAD, event_ts="1767225603.000100"
                )
            ),
        ),
    ]
    records, _, _ = run(lines)
    lead = delivered(records)["lead"]
    agree, done = lead[-2], lead[-1]
    assert axes(agree) == ("to_me", "may_respond", "notify")
    assert agree["attention"]["reason"] == "signal_agree"
    assert done["attention"]["reason"] == "signal_done"
    assert delivered(records)["worker-1"][-1]["injection"]["mode"] == "silent"


def test_a_must_respond_event_gets_a_seen_signal_in_the_outbox() -> None:
    records, _, _ = run(joined() + [say(1, f"<@{LEAD}> are you there?")])
    outbound = [r for r in records if "outbound" in r]
    assert outbound == [
        {
            "agent": "lead",
            "outbound": {
                "action": "react",
                "agent": "lead",
                "signal": "seen",
                "emoji": "eyes",
                "platform": "slack",
                "conversation": "C0GEN",
                "messageId": ts(1),
                "eventId": f"slack:T0LOCAL:C0GEN:{ts(1)}",
                "eta": None,
                "placed": [],  # the first status on a message just told: nothing to take off
                "idempotencyKey": f"slack:T0LOCAL:C0GEN:{ts(1)}:lead:react:seen",
            },
        }
    ]


def test_a_person_over_budget_is_queued_not_silenced() -> None:
    workspace = local_workspace(budget={"turns": 2, "window_s": 3600})
    lines = joined() + [say(n * 60, f"<@{LEAD}> question {n}?") for n in range(1, 4)]
    records, _, _ = run(lines, workspace)
    last = delivered(records)["lead"][-1]
    assert (last["attention"]["policy"], last["injection"]["mode"]) == (
        "must_respond",
        "tool_mailbox",
    )
    assert last["attention"]["reason"] == "over_budget"
    assert [r["outbound"].get("signal", "notice") for r in records if "outbound" in r] == [
        "seen",
        "seen",
        "queued",
        "notice",  # when the agent answers again (tests/core/test_turn_budget.py)
    ]


def test_an_event_received_after_its_deadline_is_may_respond() -> None:
    event = slack_message(ts(1), f"<@{LEAD}> still there?")
    lines = joined() + [line("2026-01-01T01:00:00Z", "slack", slack_body(event))]
    records, _, _ = run(lines)
    last = delivered(records)["lead"][-1]
    assert (last["attention"]["policy"], last["attention"]["reason"]) == ("may_respond", "expired")


def test_slack_connect_users_cannot_trigger_agents_by_default() -> None:
    event = slack_message(ts(1), f"<@{LEAD}> hi from another company")
    event["user_team"] = "T0OTHER"
    records, _, _ = run(joined() + [line(at(1), "slack", slack_body(event))])
    last = delivered(records)["lead"][-1]
    assert (last["attention"]["policy"], last["attention"]["reason"]) == (
        "must_not_respond",
        "external_author",
    )


def test_a_discord_reaction_added_again_after_removal_is_a_new_event() -> None:
    from builders import D_HUMAN, D_LEAD, discord_dispatch, discord_message

    def reaction(name: str) -> dict[str, Any]:
        return discord_dispatch(
            name,
            {
                "user_id": D_HUMAN,
                "channel_id": "820000000000000001",
                "guild_id": "800000000000000001",
                "message_id": "830000000000000001",
                "message_author_id": D_LEAD,
                "emoji": {"id": None, "name": "👍"},
            },
        )

    posted = discord_message("830000000000000001", "deploy now?", author=D_LEAD, bot=True)
    lines = [line(at(1), "discord", posted, a) for a in AGENTS]
    for n, name in enumerate(
        ["MESSAGE_REACTION_ADD", "MESSAGE_REACTION_REMOVE", "MESSAGE_REACTION_ADD"]
    ):
        lines += [line(at(2 + n), "discord", reaction(name), a) for a in AGENTS]
    records, stats, _ = run(lines)
    assert (stats.events, stats.duplicates) == (4, 8)
    ids = [p["eventId"] for p in delivered(records)["lead"][1:]]
    base = "discord:830000000000000001"
    assert ids == [f"{base}+{D_HUMAN}:👍", f"{base}-{D_HUMAN}:👍", f"{base}+{D_HUMAN}:👍#2"]


def test_a_role_mention_never_selects_an_agent_that_cannot_answer_there() -> None:
    # worker-1 is first in manifest order but was asked to leave, so worker-2 must be chosen.
    lines = joined() + [
        say(1, f"<@{W1}> please leave this channel"),
        say(60, "<!subteam^S0BACK> who can look at the failing build?"),
    ]
    records, _, _ = run(lines)
    found = delivered(records)
    assert found["worker-1"][-1]["attention"]["reason"] == "left_conversation"
    assert axes(found["worker-2"][-1]) == ("to_my_role", "may_respond", "buffered")
    assert found["worker-2"][-1]["attention"]["claimedBy"] == "agent:worker-2"


def test_a_role_mention_goes_to_an_agent_whose_harness_is_up_while_one_is() -> None:
    # worker-1 is first in manifest order and as free, but its harness is down.
    async def scenario() -> dict[str, str | None]:
        engine, store, clock = await seated()
        engine.mark_unavailable("worker-1")
        asked = normalise(slack_body(slack_message(ts(1), "<!subteam^S0BACK> who can look?")))
        assert asked is not None
        await engine.ingest(asked)
        engine.mark_unavailable("worker-2")
        both_down = normalise(slack_body(slack_message(ts(2), "<!subteam^S0BACK> anyone?")))
        assert both_down is not None
        await engine.ingest(both_down)
        holders = {
            e.event_id: engine.state.claim_holder(e.event_id, clock.now())
            for e in (asked, both_down)
        }
        await store.close()
        return holders

    holders = asyncio.run(scenario())
    assert list(holders.values()) == ["worker-2", "worker-1"]  # with none up, manifest order


def test_a_run_of_role_questions_is_spread_over_the_role_each_owed_until_ended() -> None:
    # Least busy counts the role questions an agent was picked for, not only the must_respond
    # ones: otherwise every question of a burst went to the first worker in manifest order.
    async def scenario() -> None:
        engine, store, clock = await seated()

        async def ask(second: int) -> str:
            event = normalise(slack_body(slack_message(ts(second), "<!subteam^S0BACK> look?")))
            assert event is not None
            await engine.ingest(event)
            holder = engine.state.claim_holder(event.event_id, clock.now())
            assert holder is not None
            return holder

        first, second = await ask(1), await ask(2)
        assert (first, second) == ("worker-1", "worker-2")
        (asked,) = engine.owed("worker-1")
        assert await engine.dispose("worker-1", asked, Disposition.RESPONDED)
        assert await ask(3) == "worker-1"  # free again, and first in manifest order
        assert await ask(4) == "worker-1"  # one owed each: a tie goes by manifest order
        assert len(engine.owed("worker-2")) == 1
        folded = Engine(engine.workspace, store, clock)
        await folded.rebuild()  # the same obligations, folded again from the ledger
        assert [folded.owed(a) for a in AGENTS] == [engine.owed(a) for a in AGENTS]
        assert (folded.state.busy["worker-1"], folded.state.busy["worker-2"]) == (2, 1)
        # Told to stop, the worker drops the role questions it was picked for here.
        stop = normalise(slack_body(slack_message(ts(5), f"<@{W1}> stop")))
        assert stop is not None
        outcome = await engine.ingest(stop)
        assert len([e for e in outcome.emissions if isinstance(e, Cancel)]) == 2
        assert engine.owed("worker-1") == []
        await store.close()

    asyncio.run(scenario())
