"""Approvals in core: who may decide, the first approver's press decides, anyone else's is
refused, silence until the deadline (on a virtual clock) is a refusal; and `ask` on the engine
posts the question, audits the request and the answer, and redraws the message once decided."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

from builders import local_workspace, slack_body, slack_message

from adapters.slack import normalise
from core.action_records import from_record
from core.actions import Ask, Choice
from core.approvals import (
    Approvals,
    Press,
    Pressed,
    choice_id,
    may_decide,
    outcome_line,
    parse_choice_id,
)
from core.asking import MAX_CHOICES, TEXT_CHARS, Approval, ask
from core.clock import VirtualClock, parse_time
from core.engine import Engine
from core.sqlite_store import SQLiteStore

CHOICES = (Choice("yes", "Allow once", True), Choice("no", "Reject", False))
AT = parse_time("2026-01-01T00:00:00Z")


def press(user: str, choice: str = "yes", *groups: str) -> Press:
    return Press(request="r1", choice=choice, platform="p", user=user, groups=groups)


def test_an_approver_is_named_by_user_id_or_by_a_group() -> None:
    approvers = ("U1", "group:S9")
    assert may_decide(approvers, "U1", ())
    assert may_decide(approvers, "U2", ("S9",))
    assert not may_decide(approvers, "U2", ("S8",))
    assert not may_decide(approvers, "S9", ())  # a group id is not a user id


def test_a_button_s_id_names_the_request_and_the_choice() -> None:
    assert parse_choice_id(choice_id("r1", "yes")) == ("r1", "yes")
    assert parse_choice_id("other:r1:yes") is None
    assert parse_choice_id("c2a:r1") is None


def test_the_first_approver_s_press_decides_and_others_are_refused() -> None:
    async def run() -> None:
        clock = VirtualClock(AT)
        approvals = Approvals(clock, {"ada": ("U1",)})
        approvals.open("r1", "ada", CHOICES, timedelta(minutes=5))
        waiting = asyncio.create_task(approvals.wait("r1"))
        assert approvals.press(press("U2")) is Pressed.NOT_APPROVER
        assert approvals.press(press("U1", "maybe")) is Pressed.CLOSED  # not a choice
        assert approvals.press(press("U1", "no")) is Pressed.DECIDED
        assert approvals.press(press("U1", "yes")) is Pressed.CLOSED  # already decided
        verdict = await waiting
        assert (verdict.choice, verdict.by, verdict.allowed) == (CHOICES[1], "U1", False)
        assert approvals.agent_of("r1") is None
        assert outcome_line(verdict) == "Reject, by U1 at 2026-01-01T00:00:00Z."

    asyncio.run(run())


def test_an_answered_press_is_none_when_it_decided_else_the_refusal_to_show() -> None:
    async def run() -> None:
        approvals = Approvals(VirtualClock(AT), {"ada": ("U1",)})
        approvals.open("r1", "ada", CHOICES, timedelta(minutes=5))
        assert approvals.answer(press("U2")) == "Only ada's approvers can answer this."
        assert approvals.answer(None) == "This question is no longer open."
        assert approvals.answer(press("U1", "no")) is None
        assert approvals.answer(press("U1")) == "This question is no longer open."

    asyncio.run(run())


def test_silence_until_the_deadline_is_a_refusal() -> None:
    async def run() -> None:
        clock = VirtualClock(AT)
        approvals = Approvals(clock, {"ada": ("U1",)})
        approvals.open("r1", "ada", CHOICES, timedelta(minutes=5))
        waiting = asyncio.create_task(approvals.wait("r1"))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        clock.advance(timedelta(minutes=5))
        verdict = await asyncio.wait_for(waiting, 5)
        assert verdict.choice is None and not verdict.allowed
        assert outcome_line(verdict) == "No answer by 2026-01-01T00:05:00Z: refused."
        assert approvals.press(press("U1")) is Pressed.CLOSED

    asyncio.run(run())


@asynccontextmanager
async def engine_with_a_message(tmp_path: Path) -> AsyncIterator[tuple[Engine, str]]:
    """An engine on a ledger holding one message in #general, and that message's event id."""
    store = SQLiteStore(str(tmp_path / "ledger.sqlite3"))
    await store.open()
    try:
        engine = Engine(local_workspace(), store, VirtualClock(AT))
        event = normalise(slack_body(slack_message("1767225600.000100", "hi", channel="C0GEN")))
        assert event is not None
        async with store.transaction():
            await engine.ingest(event)
        yield engine, event.event_id
    finally:
        await store.close()


def test_asking_posts_the_question_audits_both_and_redraws_it_once_decided(
    tmp_path: Path,
) -> None:
    async def run() -> None:
        async with engine_with_a_message(tmp_path) as (engine, event_id):
            store = engine.store
            assert isinstance(store, SQLiteStore)
            engine.approvals.approvers["lead"] = ("U1",)
            approval = Approval(event_id=event_id, text="lead asks", choices=CHOICES)
            asking = asyncio.create_task(ask(engine, "lead", approval))
            (question,) = await _asks(store, 1)
            assert isinstance(question, Ask) and question.in_reply_to == event_id
            assert (question.conversation, question.choices) == ("C0GEN", CHOICES)
            async with store.transaction():  # as the outbox marks it once posted
                await store.outbox_mark(question.key, "sent", "now", {"messageId": "m1"})
            decided = Press(request=question.request, choice="yes", platform="slack", user="U1")
            assert engine.approvals.press(decided) is Pressed.DECIDED
            verdict = await asking
            assert verdict.allowed
            _, closed = await _asks(store, 2)
            assert isinstance(closed, Ask) and closed.message_id == "m1" and not closed.choices
            assert closed.outcome is not None and closed.outcome.startswith("Allow once, by U1")
            rows = store.db.execute("SELECT what, outcome, detail FROM audit ORDER BY rowid")
            audited = [(o, json.loads(d)) for w, o, d in rows if w == "approval"]
            assert [o for o, _ in audited] == ["asked", "allowed"]
            assert audited[1][1]["by"] == "U1" and audited[1][1]["choice"] == "yes"

    asyncio.run(run())


def test_an_agent_s_long_request_is_shown_bounded(tmp_path: Path) -> None:
    """A tool's title can be a whole script, and an agent may offer any number of options: the
    question keeps `TEXT_CHARS` of the text and the first `MAX_CHOICES` choices, and only those
    can be pressed."""

    async def run() -> None:
        async with engine_with_a_message(tmp_path) as (engine, event_id):
            store = engine.store
            assert isinstance(store, SQLiteStore)
            engine.approvals.approvers["lead"] = ("U1",)
            many = tuple(Choice(str(n), f"option {n}", n % 2 == 0) for n in range(MAX_CHOICES + 3))
            text = "lead asks to use " + "cat <<EOF > x.py\n" * 500
            approval = Approval(event_id=event_id, text=text, choices=many)
            asking = asyncio.create_task(ask(engine, "lead", approval))
            (question,) = await _asks(store, 1)
            assert isinstance(question, Ask) and question.choices == many[:MAX_CHOICES]
            assert len(question.text) == TEXT_CHARS and question.text.endswith("…")
            assert text.startswith(question.text[:-1])
            late = Press(request=question.request, choice=many[-1].id, platform="slack", user="U1")
            assert engine.approvals.press(late) is Pressed.CLOSED
            asking.cancel()

    asyncio.run(run())


def test_an_agent_without_approvers_is_refused_at_once(tmp_path: Path) -> None:
    async def run() -> None:
        async with engine_with_a_message(tmp_path) as (engine, event_id):
            approval = Approval(event_id=event_id, text="lead asks", choices=CHOICES)
            verdict = await ask(engine, "lead", approval)
            assert verdict.choice is None
            assert isinstance(engine.store, SQLiteStore)
            assert await _asks(engine.store, 0) == []

    asyncio.run(run())


async def _asks(store: SQLiteStore, count: int) -> list[object]:
    """The asks in the outbox once there are `count` of them."""
    for _ in range(100):
        rows = [json.loads(a) for (a,) in store.db.execute("SELECT action FROM outbox ORDER BY n")]
        asks = [from_record(r) for r in rows if r["action"] == "ask"]
        if len(asks) >= count:
            return asks
        await asyncio.sleep(0.02)
    raise AssertionError(f"{count} asks never queued")
