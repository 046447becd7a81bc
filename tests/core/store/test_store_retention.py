"""The `Retention` contract: a batch drops what is older than its moment and may go, with what
belongs to it, and keeps the ledger's newest record, each conversation's newest message,
records a decision is still open on, the records of who is where, and what has not been sent;
pruning goes batch by batch until nothing is left to drop, and the ledger numbers what comes
next after all it ever held."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from store_backends import Backend
from test_store_deliveries import asked, chatter

from core.decision import Decision, Disposition
from core.retention import prune, rehearse
from core.store import Store
from core.store_prune import KEPT_KINDS

OLD = "2026-01-01T00:00:00Z"
NEW = "2026-06-01T00:00:00Z"
BEFORE = datetime(2026, 3, 1, tzinfo=UTC)
MESSAGE = "chat.message"

Decided = Callable[[str, str], Decision]


async def said(
    store: Store, event_id: str, where: str, ts: str, *decided: Decided, kind: str = MESSAGE
) -> int:
    """An event in conversation `where` at `ts`, received by the lead, with the lead's
    decisions as `decided` makes them, delivered."""
    decisions = [decide(event_id, "lead") for decide in decided]
    data = {"conversation": {"id": where, "kind": "channel"}, "text": event_id}
    seq = await store.append(event_id, kind, "human:ana", data, ts)
    assert seq is not None
    await store.add_receipt(event_id, "lead")
    await store.record_decisions(seq, decisions, ts)
    for decision in decisions:
        await store.mark_delivered(event_id, decision.agent, 1)
    return seq


async def ids(store: Store) -> list[str]:
    return [entry.id async for entry in store.ledger()]


def test_old_records_go_with_their_receipts_and_decisions(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        await said(store, "old-1", "C1", OLD, chatter)
        await said(store, "old-2", "C1", OLD, chatter)
        await said(store, "new-1", "C1", NEW, chatter)
        dropped = (await store.prune_batch(BEFORE, 100)).dropped
        assert (dropped["events"], dropped["receipts"], dropped["decisions"]) == (2, 2, 2)
        assert await ids(store) == ["new-1"]
        assert await store.receipts("old-1") == []
        assert await store.deliveries("old-1") == []
        assert await store.receipts("new-1") == ["lead"]
        assert [d.decision.event_id for d in await store.deliveries("new-1")] == ["new-1"]

    backend.run(scenario)


def test_what_catch_up_and_open_decisions_need_is_kept_however_old(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        await said(store, "c1-older", "C1", OLD, chatter)
        await said(store, "c1-newest", "C1", OLD, chatter)  # C1's newest message
        await said(store, "owed", "C2", OLD, asked)  # a must_respond not yet answered
        await said(store, "answered", "C2", OLD, asked)
        await store.set_disposition("answered", "lead", Disposition.RESPONDED, "sent", OLD)
        seq = await store.append("undelivered", MESSAGE, "human:ana", {"text": "x"}, OLD)
        assert seq is not None
        await store.record_decisions(seq, [chatter("undelivered", "lead")], OLD)  # still pending
        await said(store, "c2-newest", "C2", OLD, chatter)
        for kind in KEPT_KINDS:  # who is where: a membership, a mute, ...
            await said(store, kind, "C4", OLD, kind=kind)
        await said(store, "reaction", "C3", OLD, kind="chat.reaction")  # the ledger's newest
        await prune(store, BEFORE)
        kept = ["c1-newest", "owed", "undelivered", "c2-newest", *KEPT_KINDS, "reaction"]
        assert await ids(store) == kept

    backend.run(scenario)


def test_unsent_actions_stay_and_old_records_of_every_kind_go(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        action = {"action": "send", "text": "hi"}
        for key in ("sent", "failed", "pending", "ambiguous", "new"):
            await store.put_outbox(key, "lead", action, NEW if key == "new" else OLD)
        await store.outbox_mark("sent", "sent", OLD, {"messageId": "1"})
        await store.outbox_mark("failed", "failed", OLD)
        await store.outbox_mark("ambiguous", "ambiguous", OLD)
        await store.audit("lead", "send", "ok", {}, OLD)
        await store.audit("lead", "send", "ok", {}, NEW)
        await store.quarantine("slack", "not JSON", "{oops", OLD)
        await store.record_escalation("lead", "unanswered", "C1", "e1", OLD)
        await store.claim("old-item", "lead", datetime(2026, 1, 1, tzinfo=UTC), 60_000)
        await store.claim("new-item", "lead", datetime(2026, 6, 1, tzinfo=UTC), 60_000)
        dropped = await prune(store, BEFORE)
        assert dropped["outbox"] == 2
        assert (dropped["audit"], dropped["quarantine"]) == (1, 1)
        assert (dropped["escalations"], dropped["claims"]) == (1, 1)
        left = {entry.key for entry in await store.outbox_newest(10)}
        assert left == {"pending", "ambiguous", "new"}
        assert [r.at for r in await store.audit_records(10)] == [NEW]
        assert await store.quarantined(10) == []
        assert await store.record_escalation("lead", "unanswered", "C1", "e1", NEW)
        assert set(await store.claims(datetime(2026, 1, 1, tzinfo=UTC))) == {"new-item"}

    backend.run(scenario)


def test_pruning_goes_batch_by_batch_to_the_end(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        for n in range(7):
            await said(store, f"old-{n}", f"C{n % 2}", OLD, chatter)
        await said(store, "new", "C0", NEW)
        batches: list[int] = []

        async def between() -> None:
            batches.append(len(await ids(store)))

        dropped = await prune(store, BEFORE, batch=2, between=between)
        assert dropped["events"] == 6  # all but C1's newest message (old-5)
        assert batches == [6, 4, 2]
        assert await ids(store) == ["old-5", "new"]
        assert await prune(store, BEFORE) == dict.fromkeys(dropped, 0)

    backend.run(scenario)


def test_a_rehearsal_counts_what_a_prune_then_drops_and_drops_nothing(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        for n in range(7):
            await said(store, f"old-{n}", f"C{n % 2}", OLD, chatter)
        await said(store, "new", "C0", NEW)
        for at in (OLD, OLD, OLD, NEW):
            await store.audit("lead", "send", "ok", {}, at)
        rehearsed = await rehearse(store, BEFORE, batch=2)
        assert (rehearsed["events"], rehearsed["audit"]) == (6, 3)
        assert len(await ids(store)) == 8
        assert len(await store.audit_records(10)) == 4
        assert await store.pruned_before() is None
        assert await prune(store, BEFORE, batch=2) == rehearsed

    backend.run(scenario)


def test_the_next_record_is_numbered_after_every_one_ever_held(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        first = await said(store, "a", "C1", OLD)
        await said(store, "b", "C1", OLD)
        last = await said(store, "c", "C2", OLD, kind="chat.reaction")
        await prune(store, BEFORE)
        assert await ids(store) == ["b", "c"]  # C1's newest message; the ledger's newest
        after = await store.append("d", MESSAGE, "human:ana", {"text": "d"}, NEW)
        assert after is not None and after > last > first
        # A dropped id is gone for good: the same event again would be taken as new, which is
        # why the shortest retention (a day) outlasts every platform's retries.
        assert await store.sequence_of("a") is None

    backend.run(scenario)


def test_how_far_it_pruned_is_kept_and_only_moves_forward(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        assert await store.pruned_before() is None
        await prune(store, BEFORE)
        earlier = datetime(2026, 2, 1, tzinfo=UTC)
        await prune(store, earlier)
        assert await store.pruned_before() == BEFORE

    async def reopened(store: Store) -> None:
        assert await store.pruned_before() == BEFORE

    backend.run(scenario)
    backend.run(reopened)  # opened again, as after a restart
