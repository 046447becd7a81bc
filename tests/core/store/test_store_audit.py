"""The `AuditLog` contract: an escalation is recorded once per reason, conversation and event;
audit records and quarantined input are kept with the transaction that wrote them, the same
input quarantined again is counted once, and the newest of them are read back oldest first."""

from __future__ import annotations

from store_backends import Backend

from core.store import AuditRecord, QuarantineRecord, Store

AT = "2026-01-01T00:00:00Z"


def test_an_escalation_is_recorded_once(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        assert await store.record_escalation("lead", "loop_limit", "C1", "e1", AT)
        assert not await store.record_escalation("lead", "loop_limit", "C1", "e1", AT)
        assert not await store.record_escalation("worker-1", "loop_limit", "C1", "e1", AT)
        assert await store.record_escalation("lead", "unanswered", "C1", "e1", AT)
        assert await store.record_escalation("lead", "loop_limit", "C1", "e2", AT)

    backend.run(scenario)


def test_audit_records_and_quarantined_input_are_accepted_in_a_transaction(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> None:
        async with store.transaction():
            await store.audit("lead", "send_message", "ok", {"arguments": {"text": "hi"}}, AT)
            await store.quarantine("slack", "not JSON", "{oops", AT)
        await store.audit("lead", "claim", "refused", {}, AT)  # and outside one

    backend.run(scenario)


def test_the_newest_records_are_read_back_oldest_first(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        for n in range(5):
            agent = "lead" if n % 2 == 0 else "worker-1"
            await store.audit(agent, "send", "ok", {"n": n, "text": "a\nb\x00"}, f"{AT}{n}")
        await store.quarantine("slack", "not JSON", "{oops", AT)
        await store.quarantine("discord", "no author", "{}", AT)
        newest = await store.audit_records(2)
        assert [(r.agent, r.detail["n"]) for r in newest] == [("worker-1", 3), ("lead", 4)]
        assert newest[0] == AuditRecord(f"{AT}3", "worker-1", "send", "ok", newest[0].detail)
        assert newest[0].detail["text"] == "a\nb\ufffd"  # as every JSON column keeps a NUL
        leads = await store.audit_records(10, agent="lead")
        assert [r.detail["n"] for r in leads] == [0, 2, 4]
        assert await store.audit_records(10, agent="nobody") == []
        assert await store.quarantined(1) == [QuarantineRecord(AT, "discord", "no author")]

    backend.run(scenario)


def test_an_input_quarantined_again_is_counted_on_the_record_already_kept(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> None:
        await store.quarantine("webchat", "not JSON", "{oops", f"{AT}1")
        await store.quarantine("webchat", "not JSON", "{oops", f"{AT}2")  # read again at a start
        await store.quarantine("webchat", "not JSON", "{oops!", f"{AT}3")  # another input
        await store.quarantine("slack", "not JSON", "{oops", f"{AT}4")  # from elsewhere
        await store.quarantine("webchat", "not JSON", "{oops", f"{AT}5")
        assert await store.quarantined(10) == [
            QuarantineRecord(f"{AT}1", "webchat", "not JSON", 3, f"{AT}5"),
            QuarantineRecord(f"{AT}3", "webchat", "not JSON"),
            QuarantineRecord(f"{AT}4", "slack", "not JSON"),
        ]

    backend.run(scenario)
