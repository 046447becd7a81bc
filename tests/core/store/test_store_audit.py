"""The `AuditLog` contract: an escalation is recorded once per reason, conversation and event;
audit records and quarantined input are kept with the transaction that wrote them."""

from __future__ import annotations

from store_backends import Backend

from core.store import Store

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
