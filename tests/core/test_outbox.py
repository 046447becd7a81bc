"""The outbox sends each action at most once visibly, through failures, unknowns and crashes."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

import pytest

from core.action_records import to_record
from core.actions import Action, Post
from core.clock import VirtualClock, parse_time
from core.errors import PermanentSendError, TransientSendError
from core.outbox import Outbox
from core.sqlite_store import SQLiteStore
from core.store import AuditRecord

AT = "2026-01-01T00:00:00Z"
HI = Post(agent="lead", platform="slack", conversation="C0GEN", key="k1", text="hi")


class ScriptedSender:
    """A platform that fails as scripted and remembers what it really posted."""

    def __init__(self, script: list[str]) -> None:
        self.script = script
        self.posted: list[str] = []
        self.lookups = 0

    async def send(self, action: Action) -> dict[str, Any]:
        assert action == HI  # the typed action the record holds
        step = self.script.pop(0) if self.script else "ok"
        if step == "transient":
            raise TransientSendError("429 rate limited")
        if step == "permanent":
            raise PermanentSendError("channel_not_found")
        self.posted.append(action.key)
        if step == "lost_answer":  # posted, but the answer never came back
            raise TimeoutError("no answer")
        return {"messageId": f"m{len(self.posted)}"}

    async def find(self, action: Action) -> dict[str, Any] | None:
        self.lookups += 1
        return {"messageId": "found"} if action.key in self.posted else None


def outbox_rows(store: SQLiteStore) -> list[tuple[str, str, int]]:
    rows = store.db.execute("SELECT idempotency_key, status, attempts FROM outbox ORDER BY n")
    return [(str(a), str(b), int(c)) for a, b, c in rows]


def run(
    script: list[str], rounds: int, *, crash_mid_send: bool = False
) -> tuple[ScriptedSender, list[tuple[str, str, int]]]:
    async def go() -> tuple[ScriptedSender, list[tuple[str, str, int]]]:
        store = SQLiteStore()
        await store.open()
        sender = ScriptedSender(script)
        outbox = Outbox(store, VirtualClock(parse_time(AT)), {"slack": sender})
        async with store.transaction():
            await store.put_outbox("k1", "lead", to_record(HI), AT)
        if crash_mid_send:
            async with store.transaction():
                await store.outbox_mark("k1", "sending", AT)
            sender.posted.append("k1")  # the platform took it just before the crash
            await outbox.recover()
        for _ in range(rounds):
            await outbox.drain()
        rows = outbox_rows(store)
        await store.close()
        return sender, rows

    return asyncio.run(go())


def test_a_plain_send_is_sent_once() -> None:
    sender, rows = run([], 3)
    assert sender.posted == ["k1"] and rows == [("k1", "sent", 1)]


def test_a_rate_limited_send_is_retried_until_it_lands_once() -> None:
    sender, rows = run(["transient", "transient"], 3)
    assert sender.posted == ["k1"] and rows == [("k1", "sent", 3)]


def test_a_permanent_failure_is_recorded_and_not_retried() -> None:
    sender, rows = run(["permanent"], 3)
    assert sender.posted == [] and rows == [("k1", "failed", 1)]


def test_a_failure_for_good_is_kept_in_the_audit_log_with_its_secrets_redacted() -> None:
    """What never reached the platform, and why, for `c2a audit`: the error passed through the
    host's redactor first, as everything the ledger keeps."""

    class Refusing:
        async def send(self, action: Action) -> dict[str, Any]:
            raise PermanentSendError("invalid_auth for token xoxb-123-secret")

        async def find(self, action: Action) -> dict[str, Any] | None:
            return None

    async def go() -> list[AuditRecord]:
        store = SQLiteStore()
        await store.open()
        clean = lambda text: text.replace("xoxb-123-secret", "[redacted]")  # noqa: E731
        outbox = Outbox(store, VirtualClock(parse_time(AT)), {"slack": Refusing()}, clean=clean)
        async with store.transaction():
            await store.put_outbox("k1", "lead", to_record(HI), AT)
        await outbox.drain()
        records = await store.audit_records(10)
        (result,) = store.db.execute("SELECT result FROM outbox").fetchone()
        assert "secret" not in result
        await store.close()
        return records

    (record,) = asyncio.run(go())
    assert (record.agent, record.what, record.outcome) == ("lead", "outbox", "failed")
    assert record.detail == {
        "key": "k1",
        "action": "send",
        "conversation": "C0GEN",
        "error": "invalid_auth for token [redacted]",
    }


def test_a_private_post_an_older_version_queued_is_sent_to_the_person_it_answers() -> None:
    """Before the host named a private post's person, each platform chose one. A record from
    then, still in the outbox at an upgrade, is named as the host names one now: the first
    `user:` recipient, else the author of the message answered."""
    asked = "slack:T0LOCAL:C0GEN:1.000100"
    told = replace(HI, key="k1", visibility="ephemeral", in_reply_to=asked)
    named = replace(HI, key="k2", visibility="dm", mentions=("user:U0BEN",))

    class Recording:
        def __init__(self) -> None:
            self.sent: list[Action] = []

        async def send(self, action: Action) -> dict[str, Any]:
            self.sent.append(action)
            return {"messageId": action.key}

        async def find(self, action: Action) -> dict[str, Any] | None:
            return None

    async def go() -> list[Action]:
        store = SQLiteStore()
        await store.open()
        sender = Recording()
        outbox = Outbox(store, VirtualClock(parse_time(AT)), {"slack": sender})
        async with store.transaction():
            await store.append(asked, "message", "U0ANA", {"author": {"id": "U0ANA"}}, AT)
            for post in (told, named):
                record = to_record(post)
                assert "person" not in record  # as an older version wrote it
                await store.put_outbox(post.key, "lead", record, AT)
        await outbox.drain()
        await store.close()
        return sender.sent

    sent = asyncio.run(go())
    assert [(a.key, getattr(a, "person", None)) for a in sent] == [("k1", "U0ANA"), ("k2", "U0BEN")]


def test_an_unknown_outcome_is_looked_for_before_any_resend() -> None:
    sender, rows = run(["lost_answer"], 3)
    assert sender.posted == ["k1"] and sender.lookups == 1
    assert rows == [("k1", "sent", 1)]


def test_a_crash_mid_send_is_recovered_without_a_second_message() -> None:
    sender, rows = run([], 2, crash_mid_send=True)
    assert sender.posted == ["k1"] and sender.lookups == 1
    assert rows == [("k1", "sent", 1)]


def test_a_failing_lookup_leaves_the_action_ambiguous_and_unsent() -> None:
    async def go() -> tuple[list[str], list[tuple[str, str, int]]]:
        store = SQLiteStore()
        await store.open()
        sender = ScriptedSender([])

        async def broken(action: Action) -> dict[str, Any] | None:
            raise TransientSendError("history unavailable")

        sender.find = broken  # type: ignore[method-assign]
        outbox = Outbox(store, VirtualClock(parse_time(AT)), {"slack": sender})
        async with store.transaction():
            await store.put_outbox("k1", "lead", to_record(HI), AT)
            await store.outbox_mark("k1", "sending", AT)
        await outbox.recover()
        await outbox.drain()
        rows = outbox_rows(store)
        await store.close()
        return sender.posted, rows

    posted, rows = asyncio.run(go())
    assert posted == [] and rows == [("k1", "ambiguous", 1)]


def test_a_record_no_sender_could_perform_fails_for_good_with_its_reason_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def go() -> tuple[ScriptedSender, list[tuple[str, str, int]], str]:
        store = SQLiteStore()
        await store.open()
        sender = ScriptedSender([])
        outbox = Outbox(store, VirtualClock(parse_time(AT)), {"slack": sender})
        broken = {**to_record(HI), "idempotencyKey": "k0", "text": None}
        async with store.transaction():
            await store.put_outbox("k0", "lead", broken, AT)
            await store.put_outbox("k1", "lead", to_record(HI), AT)
        with caplog.at_level(logging.ERROR, logger="core.outbox"):
            assert await outbox.drain() == 1  # the readable one still goes
            assert await outbox.drain() == 0  # the unreadable one is not tried again
        rows = outbox_rows(store)
        (result,) = store.db.execute("SELECT result FROM outbox WHERE idempotency_key = 'k0'")
        await store.close()
        return sender, rows, str(result[0])

    sender, rows, result = asyncio.run(go())
    assert sender.posted == ["k1"]
    assert rows == [("k0", "failed", 0), ("k1", "sent", 1)]
    assert "text is None" in result
    assert any("k0" in r.getMessage() and "text is None" in r.getMessage() for r in caplog.records)
