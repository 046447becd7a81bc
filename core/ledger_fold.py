"""Folding ledger records into the engine's memory, a page at a time, in sequence order.

`Engine.rebuild` folds the whole ledger this way (`fold_ledger`) after a start and whenever the
memory stopped matching the ledger, and `Engine.catch_up` folds the records other processes
committed since its last one (where several share the ledger), so each record reaches the
memory by the same path, whoever appended it. The ledger is read in pages
(`PAGE` records), each with the receipts and deliveries of all its events in one read apiece,
not three reads a record; a record is then folded with what its page read for it: who received
the event, the decisions made for it, and how each agent has ended it so far.

A whole ledger's fold (`few_collections`) runs with the garbage collector's thresholds raised:
it makes millions of objects that mostly live on in the state, and CPython's default young
generation of 700 walked them again and again as they piled up, a quarter of a start's time.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from core.agent_records import DECIDED_KIND, DISPOSED_KIND, LEFT_KIND, REVISED_KIND
from core.clock import parse_time
from core.codec import LEDGER_KINDS, event_from_data
from core.deciding import Decider
from core.decision import Disposition
from core.follow_up_records import BUDGET_TURN, HANDOVER_KIND, REMINDER_KIND
from core.followup import DIGEST_KIND, FollowUp
from core.mutes import MUTED_KIND, fold_mute
from core.state import State
from core.state_records import message_of
from core.store import Claims, Deliveries, Ledger, LedgerEntry, StoredDelivery, entry_of

__all__ = [
    "FOLD_THRESHOLDS",
    "PAGE",
    "Page",
    "few_collections",
    "fold_entry",
    "fold_ledger",
    "pages",
]

PAGE = 1000
# Young objects per collection, young collections per middle one, middle per full one, while a
# whole ledger is folded (as `c2a run` sets them once it has started).
FOLD_THRESHOLDS = (50_000, 20, 100)
_folding: list[tuple[int, int, int]] = []  # the thresholds before the outermost fold
_CHAT_KINDS = frozenset(LEDGER_KINDS.values())


class _Reads(Ledger, Deliveries, Protocol):
    """What a page is read from: the ledger and the deliveries of one database."""


class _Folded(_Reads, Claims, Protocol):
    """What the memory is folded from: the pages, and the claims held."""


@dataclass(frozen=True, slots=True)
class Page:
    """Consecutive ledger records, with the receipts and deliveries of their events by
    sequence number (an event with none is absent)."""

    entries: list[LedgerEntry]
    receipts: dict[int, list[str]]
    deliveries: dict[int, list[StoredDelivery]]

    def receipts_of(self, entry: LedgerEntry) -> list[str]:
        """The agents whose connections received the record's event."""
        return self.receipts.get(entry.seq, [])

    def deliveries_of(self, entry: LedgerEntry) -> list[StoredDelivery]:
        """The deliveries of the record's event, by agent."""
        return self.deliveries.get(entry.seq, [])


async def pages(store: _Reads, since_seq: int, size: int = PAGE) -> AsyncIterator[Page]:
    """The ledger after `since_seq` in pages of at most `size` records, each read with its
    events' receipts and deliveries."""
    entries: list[LedgerEntry] = []
    async for entry in store.ledger(since_seq):
        entries.append(entry)
        if len(entries) == size:
            yield await _page(store, since_seq, entries)
            since_seq, entries = entries[-1].seq, []
    if entries:
        yield await _page(store, since_seq, entries)


async def _page(store: _Reads, after_seq: int, entries: list[LedgerEntry]) -> Page:
    upto_seq = entries[-1].seq
    receipts = await store.receipts_between(after_seq, upto_seq)
    return Page(entries, receipts, await store.deliveries_between(after_seq, upto_seq))


@contextmanager
def few_collections() -> Iterator[None]:
    """Raise the collector's thresholds to at least `FOLD_THRESHOLDS` until the block ends; the
    outermost of several at once (engines started together) puts back what was set before."""
    if not _folding:
        before = gc.get_threshold()
        _folding.append(before)
        gc.set_threshold(
            *(max(now, raised) for now, raised in zip(before, FOLD_THRESHOLDS, strict=True))
        )
    else:
        _folding.append(_folding[0])
    try:
        yield
    finally:
        before = _folding.pop()
        if not _folding:
            gc.set_threshold(*before)


async def fold_ledger(
    store: _Folded,
    state: State,
    followup: FollowUp,
    decider: Decider,
    after: int,
    now: datetime,
) -> tuple[int, int]:
    """Fold the records after sequence `after` and every claim unexpired at `now` into
    `state`; returns the chat events read and the last sequence folded."""
    count, start = 0, after
    async for page in pages(store, after):
        for entry in page.entries:
            if entry.kind == DECIDED_KIND:
                await _fold_decided(store, entry, start, state, decider)
            elif entry.kind == REVISED_KIND:
                await _fold_revised(store, entry, state)
            else:
                received, stored = page.receipts_of(entry), page.deliveries_of(entry)
                count += fold_entry(entry, received, stored, state, followup, decider)
            after = entry.seq
    for item, (agent, expires) in (await store.claims(now)).items():
        state.note_claim(item, agent, expires)
    return count, after


async def _fold_decided(
    store: _Folded, entry: LedgerEntry, start: int, state: State, decider: Decider
) -> None:
    """Another process decided a later copy of an event for more agents (`x.c2a.decided`).
    Folded only when this memory took the event in before (at or before `start`, where this
    fold began); an event folded in the same fold came with every decision made for it."""
    event_id, agents = entry.data["event"], set(entry.data["agents"])
    original = await entry_of(store, event_id)
    if original is None or original.seq > start:
        return
    event = event_from_data(original.data)
    state.note_vias(event, await store.receipts(event_id))
    stored = [d for d in await store.deliveries(event_id) if d.decision.agent in agents]
    state.apply(event, [d.decision for d in stored], first=False)
    waiting = [d.decision for d in stored if d.status == "pending"]
    if waiting:
        decider.note_question(event, original.seq, waiting, parse_time(entry.ts), state)


async def _fold_revised(store: _Folded, entry: LedgerEntry, state: State) -> None:
    """A waiting delivery another process revised (`x.c2a.revised`): the revised decision, read
    back from the ledger, replaces the one held. Folding it twice changes nothing."""
    event_id, agent = entry.data["event"], entry.data["agent"]
    original = await entry_of(store, event_id)
    mine = [d.decision for d in await store.deliveries(event_id) if d.decision.agent == agent]
    if original is not None and mine:
        state.note_revised(event_from_data(original.data), mine[0])


def fold_entry(
    entry: LedgerEntry,
    receipts: list[str],
    stored: list[StoredDelivery],
    state: State,
    followup: FollowUp,
    decider: Decider,
) -> bool:
    """Fold one record into `state`, given its event's `receipts` and `stored` deliveries;
    True when it was a chat event (not the host's own record). Folding a record of the host's
    own twice changes nothing."""
    if entry.kind == LEFT_KIND:
        state.left.add((entry.data["agent"], entry.data["place"]))
        return False
    if entry.kind == DISPOSED_KIND:  # another process's (`Engine.dispose`)
        data = entry.data
        disposition = Disposition(data["disposition"])
        state.note_disposition(data["event"], data["message"], data["agent"], disposition)
        return False
    if entry.kind == MUTED_KIND:
        fold_mute(state, entry.data)
        return False
    if entry.kind == DIGEST_KIND:
        followup.note_digest(entry)
        return False
    if entry.kind == REMINDER_KIND and entry.data.get(BUDGET_TURN):
        # A catch-up's turn (`core.followup`), counted against its asker's budget once: the
        # process that took it counted it then, and folds it again where the ledger is shared.
        data = entry.data
        agent, person, at = data["agent"], data["author"]["id"], parse_time(data["created_at"])
        if at not in state.turns.get((agent, person), ()):
            state.note_turn(agent, person, at)
        return False
    if entry.kind == HANDOVER_KIND:  # owed by the agent it was handed to until it ends it
        for delivery in stored:
            if delivery.disposition is None:
                state.note_owed(delivery.decision)
        return False
    if entry.kind not in _CHAT_KINDS:
        return False  # the host's own records (reminders); CCCS: skip unknown kinds
    event = event_from_data(entry.data)
    state.note_vias(event, receipts)
    state.apply(event, [d.decision for d in stored])
    waiting = [d.decision for d in stored if d.status == "pending"]
    if waiting:  # nothing waits on nearly every record: its time is not even parsed
        decider.note_question(event, entry.seq, waiting, parse_time(entry.ts), state)
    for delivery in stored:
        if delivery.disposition is not None:
            agent, disposition = delivery.decision.agent, delivery.disposition
            state.note_disposition(event.event_id, message_of(event), agent, disposition)
    return True
