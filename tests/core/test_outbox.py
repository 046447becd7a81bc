"""The outbox sends each action at most once visibly, through failures, unknowns and crashes."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from core.clock import VirtualClock, parse_time
from core.errors import PermanentSendError, TransientSendError
from core.outbox import Outbox
from core.sqlite_store import SQLiteStore

AT = "2026-01-01T00:00:00Z"


class ScriptedSender:
    """A platform that fails as scripted and remembers what it really posted."""

    def __init__(self, script: list[str]) -> None:
        self.script = script
        self.posted: list[str] = []
        self.lookups = 0

    async def send(self, action: Mapping[str, Any]) -> dict[str, Any]:
        step = self.script.pop(0) if self.script else "ok"
        if step == "transient":
            raise TransientSendError("429 rate limited")
        if step == "permanent":
            raise PermanentSendError("channel_not_found")
        self.posted.append(action["idempotencyKey"])
        if step == "lost_answer":  # posted, but the answer never came back
            raise TimeoutError("no answer")
        return {"messageId": f"m{len(self.posted)}"}

    async def find(self, action: Mapping[str, Any]) -> dict[str, Any] | None:
        self.lookups += 1
        key = action["idempotencyKey"]
        return {"messageId": "found"} if key in self.posted else None


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
            await store.put_outbox(
                "k1", "lead", {"platform": "slack", "idempotencyKey": "k1", "text": "hi"}, AT
            )
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

        async def broken(action: Mapping[str, Any]) -> dict[str, Any] | None:
            raise TransientSendError("history unavailable")

        sender.find = broken  # type: ignore[method-assign]
        outbox = Outbox(store, VirtualClock(parse_time(AT)), {"slack": sender})
        async with store.transaction():
            await store.put_outbox("k1", "lead", {"platform": "slack", "idempotencyKey": "k1"}, AT)
            await store.outbox_mark("k1", "sending", AT)
        await outbox.recover()
        await outbox.drain()
        rows = outbox_rows(store)
        await store.close()
        return sender.posted, rows

    posted, rows = asyncio.run(go())
    assert posted == [] and rows == [("k1", "ambiguous", 1)]
