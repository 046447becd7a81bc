"""The `Deliveries` contract: one record per (event, agent), read back at once (also before the
transaction that wrote it commits), and moved on by acknowledgements, dispositions, failures and
revisions."""

from __future__ import annotations

from dataclasses import replace
from typing import Unpack

from store_backends import Backend

from core.decision import Decision, Directedness, Disposition, InjectionMode, Policy
from core.store import SeenWhere, Store

AGENTS = ("lead", "worker-1")


def asked(event_id: str, agent: str) -> Decision:
    return Decision(
        event_id,
        agent,
        Directedness.TO_ME,
        Policy.MUST_RESPOND,
        InjectionMode.BUFFERED,
        "direct_mention",
        deadline_ms=300_000,
    )


def chatter(event_id: str, agent: str) -> Decision:
    return replace(
        asked(event_id, agent),
        directedness=Directedness.AMBIENT,
        policy=Policy.MUST_NOT_RESPOND,
        mode=InjectionMode.DIGEST,
        reason="status_broadcast",
        deadline_ms=None,
    )


async def decided(store: Store, event_id: str, place: str, *decisions: Decision) -> int:
    data = {"conversation": {"id": place, "kind": "channel"}, "text": event_id}
    seq = await store.append(event_id, "message", "human:u", data, f"t-{event_id}")
    assert seq is not None
    await store.record_decisions(seq, list(decisions), "2026-01-01T00:00:00Z")
    return seq


def test_decisions_read_back_whole_even_before_their_transaction_commits(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> None:
        async with store.transaction():
            claimed = replace(
                asked("e1", "lead"), claimed_by="lead", continues="e0", supersedes="e0"
            )
            await decided(store, "e1", "C1", asked("e1", "worker-1"), claimed)
            [lead, worker] = await store.deliveries("e1")
            assert await store.decided_agents("e1") == set(AGENTS)
        assert (lead.decision, lead.seq, lead.status, lead.attempt) == (claimed, 1, "pending", 0)
        assert (worker.decision, worker.disposition) == (asked("e1", "worker-1"), None)
        assert await store.deliveries("e2") == []

    backend.run(scenario)


def test_the_deliveries_of_a_range_of_events_read_at_once_by_sequence_number(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> None:
        async with store.transaction():  # read back before the commit too
            await decided(store, "e1", "C1", asked("e1", "worker-1"), asked("e1", "lead"))
            await decided(store, "e2", "C1")
            await decided(store, "e3", "C1", chatter("e3", "lead"))
            between = await store.deliveries_between(1, 3)
            assert list(between) == [3]
            assert between[3] == await store.deliveries("e3")
        await store.mark_delivered("e1", "lead", 1)
        await store.set_disposition("e1", "lead", Disposition.RESPONDED, "done", "t")
        everything = await store.deliveries_between(0, 3)
        assert everything == {1: await store.deliveries("e1"), 3: await store.deliveries("e3")}
        [lead, worker] = everything[1]
        assert (lead.decision.agent, lead.status, lead.disposition) == (
            "lead",
            "delivered",
            Disposition.RESPONDED,
        )
        assert (worker.decision.agent, worker.seq, worker.status) == ("worker-1", 1, "pending")
        assert await store.deliveries_between(3, 9) == {}

    backend.run(scenario)


def test_a_rolled_back_transaction_keeps_no_decision(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        try:
            async with store.transaction():
                await decided(store, "e1", "C1", asked("e1", "lead"))
                raise RuntimeError("the caller failed")
        except RuntimeError:
            pass
        assert await store.deliveries("e1") == []
        assert await store.sequence_of("e1") is None
        await decided(store, "e1", "C1", asked("e1", "lead"))  # the same rows go in again
        assert [d.decision.agent for d in await store.deliveries("e1")] == ["lead"]

    backend.run(scenario)


def test_pending_is_what_the_harness_has_not_acknowledged_oldest_first(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        for n in range(1, 5):
            await decided(store, f"e{n}", "C1", asked(f"e{n}", "lead"))
        await store.note_attempt("e2", "lead", 1)
        await store.mark_delivered("e2", "lead", 2)
        pending = await store.pending("lead")
        assert [d.decision.event_id for d in pending] == ["e1", "e3", "e4"]
        assert [d.decision.event_id for d in await store.pending("lead", limit=2)] == ["e1", "e3"]
        await store.note_attempt("e3", "lead", 3)
        [delivered] = await store.deliveries("e2")
        [tried] = await store.deliveries("e3")
        assert (delivered.status, delivered.attempt) == ("delivered", 2)
        assert (tried.status, tried.attempt) == ("pending", 3)
        assert await store.pending("worker-1") == []

    backend.run(scenario)


def test_an_acknowledged_must_respond_without_disposition_is_overdue_until_chased(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> None:
        await decided(store, "e1", "C1", asked("e1", "lead"), chatter("e1", "worker-1"))
        await decided(store, "e2", "C1", asked("e2", "lead"))
        await decided(store, "e3", "C1", asked("e3", "lead"))
        for event_id in ("e1", "e2", "e3"):
            await store.mark_delivered(event_id, "lead", 1)
        await store.mark_delivered("e1", "worker-1", 1)
        assert await store.set_disposition("e2", "lead", Disposition.RESPONDED, "done", "t")
        assert not await store.set_disposition("e2", "worker-1", Disposition.IGNORED, "", "t")
        assert await store.overdue("2025-12-31T00:00:00Z") == []
        overdue = await store.overdue("2026-01-01T00:00:00Z")
        assert [(d.decision.event_id, d.decision.agent) for d in overdue] == [
            ("e1", "lead"),
            ("e3", "lead"),
        ]
        await store.set_status("e1", "lead", "reminded")
        overdue = await store.overdue("2026-01-01T00:00:00Z")
        assert [d.decision.event_id for d in overdue] == ["e3"]
        [responded] = await store.deliveries("e2")
        assert responded.disposition is Disposition.RESPONDED

    backend.run(scenario)


def role_question(event_id: str, agent: str, holder: str) -> Decision:
    """A role question offered to `agent`, whose claim the host gave `holder`."""
    policy = Policy.MAY_RESPOND if agent == holder else Policy.MUST_NOT_RESPOND
    reason = "role_mention" if agent == holder else "claimed_by_other"
    return replace(
        asked(event_id, agent),
        directedness=Directedness.TO_MY_ROLE,
        policy=policy,
        reason=reason,
        deadline_ms=None,
        claimed_by=holder,
    )


def test_the_picked_responder_of_a_role_question_is_overdue_too(backend: Backend) -> None:
    """The responder the host picked owes the answer as a mention's agent does; the others,
    told `claimed_by_other`, owe nothing, and a `may_respond` of no claim is no obligation."""

    async def scenario(store: Store) -> None:
        picked = role_question("e1", "worker-1", "worker-1")
        await decided(store, "e1", "C1", role_question("e1", "lead", "worker-1"), picked)
        loose = replace(picked, event_id="e2", claimed_by=None, reason="thread_participant")
        await decided(store, "e2", "C1", loose)
        for event_id, agent in (("e1", "lead"), ("e1", "worker-1"), ("e2", "worker-1")):
            await store.mark_delivered(event_id, agent, 1)
        [overdue] = await store.overdue("2026-01-01T00:00:00Z")
        assert (overdue.decision, overdue.status) == (picked, "delivered")
        await store.set_disposition("e1", "worker-1", Disposition.RESPONDED, "done", "t")
        assert await store.overdue("2026-01-01T00:00:00Z") == []

    backend.run(scenario)


def test_a_failed_delivery_is_failed_in_status_and_disposition(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        await decided(store, "e1", "C1", asked("e1", "lead"))
        await store.mark_failed("e1", "lead", "refused", "t")
        [failed] = await store.deliveries("e1")
        assert (failed.status, failed.disposition) == ("failed", Disposition.FAILED)
        assert await store.pending("lead") == []

    backend.run(scenario)


def test_only_a_delivery_still_pending_is_revised(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        seq = await decided(store, "e1", "C1", asked("e1", "lead"), asked("e1", "worker-1"))
        await store.mark_delivered("e1", "worker-1", 1)
        relaxed = Decision(
            "e1",
            "lead",
            Directedness.TO_ME,
            Policy.MAY_RESPOND,
            InjectionMode.BUFFERED,
            "answered_in_gap",
        )
        assert await store.revise_pending(seq, relaxed)
        assert not await store.revise_pending(seq, replace(relaxed, agent="nobody"))
        assert not await store.revise_pending(seq, replace(relaxed, agent="worker-1"))
        [lead, worker] = await store.deliveries("e1")
        assert lead.decision == relaxed
        assert worker.decision == asked("e1", "worker-1")

    backend.run(scenario)


def test_seen_by_is_the_latest_deliveries_oldest_first_narrowed_by_its_filters(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> None:
        await decided(store, "e1", "C1", asked("e1", "lead"))
        await decided(store, "e2", "C2", asked("e2", "lead"), chatter("e2", "worker-1"))
        await decided(store, "e3", "C1", chatter("e3", "lead"))
        await decided(store, "e4", "C1", asked("e4", "lead"))

        async def seen(agent: str, limit: int = 50, **where: Unpack[SeenWhere]) -> list[str]:
            rows = await store.seen_by(agent, limit=limit, **where)
            for entry, delivery in rows:
                assert entry.id == delivery.decision.event_id == entry.data["text"]
            return [entry.id for entry, _ in rows]

        assert await seen("lead") == ["e1", "e2", "e3", "e4"]
        assert await seen("lead", limit=2) == ["e3", "e4"]
        assert await seen("lead", conversation="C1") == ["e1", "e3", "e4"]
        assert await seen("lead", conversation="C1", thread="") == ["e1", "e3", "e4"]
        assert await seen("lead", conversation=None, before_seq=4, after_seq=1) == ["e2", "e3"]
        assert await seen("lead", mode="digest") == ["e3"]
        assert await seen("worker-1") == ["e2"]

    backend.run(scenario)


def test_a_delivery_superseded_before_its_harness_had_it_is_withdrawn(backend: Backend) -> None:
    """Words edited or deleted, or a question another agent now holds, before the harness was
    sent them: never sent (no longer pending); one already delivered stays as it was."""

    async def scenario(store: Store) -> None:
        await decided(store, "e1", "C1", asked("e1", "lead"), asked("e1", "worker-1"))
        await store.mark_delivered("e1", "worker-1", 1)
        for agent in AGENTS:
            await store.set_disposition("e1", agent, Disposition.SUPERSEDED, "deleted", "t")
        lead, worker = await store.deliveries("e1")
        assert (lead.status, lead.disposition) == ("withdrawn", Disposition.SUPERSEDED)
        assert (worker.status, worker.disposition) == ("delivered", Disposition.SUPERSEDED)
        assert await store.pending("lead") == []
        await decided(store, "e2", "C1", asked("e2", "lead"))
        await store.set_disposition("e2", "lead", Disposition.IGNORED, "left", "t")
        assert [d.decision.event_id for d in await store.pending("lead")] == ["e2"]

    backend.run(scenario)
