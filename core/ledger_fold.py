"""Folding ledger records into the engine's memory, one at a time, in sequence order.

`Engine.rebuild` folds the whole ledger this way after a start, and `Engine.catch_up` folds the
records other processes committed since its last one (where several share the ledger), so each
record reaches the memory by the same path, whoever appended it. A record is folded with what
the store holds for it now: who received the event, the decisions made for it, and how each
agent has ended it so far.
"""

from __future__ import annotations

from core.clock import parse_time
from core.codec import LEDGER_KINDS, event_from_data
from core.deciding import Decider
from core.followup import DIGEST_KIND, FollowUp
from core.mutes import MUTED_KIND, fold_mute
from core.state import State
from core.store import LedgerEntry, Store

__all__ = ["LEFT_KIND", "fold_entry"]

LEFT_KIND = "x.c2a.left"
_CHAT_KINDS = frozenset(LEDGER_KINDS.values())


async def fold_entry(
    entry: LedgerEntry, state: State, store: Store, followup: FollowUp, decider: Decider
) -> bool:
    """Fold one record into `state`; True when it was a chat event (not the host's own record).
    Folding a record of the host's own twice changes nothing."""
    if entry.kind == LEFT_KIND:
        state.left.add((entry.data["agent"], entry.data["place"]))
        return False
    if entry.kind == MUTED_KIND:
        fold_mute(state, entry.data)
        return False
    if entry.kind == DIGEST_KIND:
        followup.note_digest(entry)
        return False
    if entry.kind not in _CHAT_KINDS:
        return False  # the host's own records (reminders); CCCS: skip unknown kinds
    event = event_from_data(entry.data)
    state.note_vias(event, await store.receipts(event.event_id))
    stored = await store.deliveries(event.event_id)
    state.apply(event, [d.decision for d in stored])
    waiting = [d.decision for d in stored if d.status == "pending"]
    decider.note_question(event, entry.seq, waiting, parse_time(entry.ts), state)
    for delivery in stored:
        if delivery.disposition is not None:
            state.note_disposition(event, delivery.decision.agent, delivery.disposition)
    return True
