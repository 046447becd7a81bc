"""Deliveries as typed values: what one agent is told about one event, made at ingest and made
again, the same, from the ledger when it is no longer at hand.

`Framer` turns an event and a decision into a `core.emission.Delivery`: the event's `Facts`
(once per event), whom the event is aimed at for this agent and, for a knock, the host-written
topic (nothing in a knock is taken from message text). `DeliveryPort` is all a harness's
deliverer asks of the host: the pending deliveries of an agent, the `Delivery` of a stored one,
and the bookkeeping of the attempts, in one transaction for each batch of them (the attempts
about to be sent, the answers that came together). `LedgerDeliveries` implements it over the
store, keeping the `Delivery` values made at ingest (`remember`, a bounded cache) until each is
acknowledged, so a first send reads nothing back; one no longer kept (evicted, or from before a
restart) is made again from the ledger.

A delivery's attempt number only goes up, across restarts: a harness seeing an attempt it has
seen before may take it for the same send. The engine writes each delivery with its first
attempt reserved (`Deliveries.record_decisions`), so the first send of one it decided here
writes nothing more: it waits only for that decision to be committed. Every other send (a
retry, one after a restart, one decided elsewhere or no longer remembered here) is written as
the next attempt first.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from core.clock import Clock, format_time, parse_time
from core.codec import event_from_data
from core.decision import Decision, Directedness, InjectionMode, Policy
from core.emission import Delivery, Facts
from core.errors import StoreError
from core.events import ChatEvent, EventKind
from core.follow_up_records import FOLLOW_UP_KINDS
from core.intent import Intent, IntentClassifier, topic
from core.manifest import Workspace
from core.revisions import is_late
from core.signals import GlyphMap
from core.store import Store, StoredDelivery, entry_of

__all__ = [
    "CONTENT_UNAVAILABLE",
    "DELIVERIES_KEPT",
    "PENDING_PAGE",
    "DeliveryPort",
    "Framer",
    "LedgerDeliveries",
    "Settled",
]

CONTENT_UNAVAILABLE = "a message whose content is unavailable (the platform withheld the text)"
_TEXT_KINDS = (EventKind.MESSAGE, EventKind.EDIT)
_REACTIONS = (EventKind.REACTION_ADDED, EventKind.REACTION_REMOVED)
DELIVERIES_KEPT = 4096  # `Delivery` values kept from ingest for their first send, at most
PENDING_PAGE = 1000  # deliveries `DeliveryPort.pending` gives at once, at most
# Reading an enum member off its class costs a lookup on every use; the hot paths read these.
_NOTIFY, _TO_ME, _MUST_NOT = InjectionMode.NOTIFY, Directedness.TO_ME, Policy.MUST_NOT_RESPOND


class Framer:
    """Makes the `Delivery` values of one workspace."""

    def __init__(self, workspace: Workspace, glyphs: GlyphMap, classifier: IntentClassifier):
        self.workspace = workspace
        self.glyphs = glyphs
        self.classifier = classifier

    def facts(self, event: ChatEvent) -> Facts:
        """What every agent's delivery of `event` shares; made once per event."""
        reaction = event.reaction
        signal = (
            self.glyphs.signal_for(event.platform, reaction or "")
            if event.kind in _REACTIONS
            else None
        )
        author = self.workspace.agent_for(event.platform, event.author.id)
        return Facts(author, self.mentions(event), signal)

    def delivery(
        self,
        event: ChatEvent,
        decision: Decision,
        seq: int,
        facts: Facts,
        intents: Callable[[], frozenset[Intent]],
        received: datetime,
        reminder_seq: int | None = None,
    ) -> Delivery:
        """One agent's delivery of `event` (ledger sequence `seq`, received at `received`);
        `intents` reads the event's intents, which only a knock's topic needs."""
        return Delivery(
            decision,
            event,
            seq,
            facts,
            received if is_late(event, received) else None,
            self._recipient(event, decision),
            self._topic(event, intents) if decision.mode is _NOTIFY else None,
            reminder_seq,
        )

    def intents(self, event: ChatEvent) -> frozenset[Intent]:
        """The event's intents, read from its text."""
        return (
            self.classifier.classify(event.text, event.platform)
            if event.kind in _TEXT_KINDS
            else frozenset()
        )

    def mentions(self, event: ChatEvent) -> tuple[str, ...]:
        """The event's mentions in the host's vocabulary (see `Facts`)."""
        if not event.mentions:
            return ()
        workspace = self.workspace
        platform = event.platform
        tokens: list[str] = []
        for user in event.mentions.users:
            agent = workspace.agent_for(platform, user)
            tokens.append(f"agent:{agent}" if agent else f"user:{user}")
        for group in event.mentions.roles:
            roles = workspace.roles_named(platform, (group,))
            owner = next(
                (a for a in workspace.agent_ids if workspace.managed_role(platform, a) == group),
                None,
            )
            if owner is not None:
                tokens.append(f"agent:{owner}")
            tokens.extend(f"role:{role}" for role in roles)
            if not roles and owner is None:
                tokens.append(f"group:{group}")
        tokens.extend(f"broadcast:{b.value}" for b in event.mentions.broadcast)
        return tuple(tokens)

    def _recipient(self, event: ChatEvent, decision: Decision) -> str | None:
        if decision.directedness is _TO_ME:
            return f"agent:{decision.agent}"
        if decision.reason == "role_mention":
            workspace = self.workspace
            roles = workspace.roles_named(event.platform, event.mentions.roles)
            mine = [r for r in roles if decision.agent in workspace.agents_by_role.get(r, ())]
            return f"role:{mine[0]}" if mine else None
        if decision.claimed_by is not None and decision.policy is not _MUST_NOT:
            return f"agent:{decision.claimed_by}"
        return None

    @staticmethod
    def _topic(event: ChatEvent, intents: Callable[[], frozenset[Intent]]) -> str:
        if event.content_withheld:
            return CONTENT_UNAVAILABLE
        if event.kind in _TEXT_KINDS:
            return topic(intents(), has_files=event.files > 0, is_reply=event.reply_to is not None)
        if event.kind in _REACTIONS:
            return "a reaction on your message"
        if event.kind is EventKind.THREAD_CREATED:
            return "a new thread"
        return "a membership change"


@dataclass(frozen=True, slots=True)
class Settled:
    """How one attempt of a delivery ended: acknowledged, or refused by the harness (`refused`
    says why, and the delivery is final, recorded failed)."""

    stored: StoredDelivery
    attempt: int
    refused: str | None = None


class DeliveryPort(Protocol):
    """What a harness's deliverer asks of the host; each bookkeeping call commits once, for
    all it is given, before it returns."""

    async def pending(self, agent: str) -> list[StoredDelivery]:
        """The agent's oldest deliveries not yet acknowledged, `PENDING_PAGE` at most, oldest
        first: a full page may have more behind it."""
        ...

    async def delivery(self, stored: StoredDelivery) -> Delivery:
        """The `Delivery` a stored delivery tells, made from the ledger."""
        ...

    async def next_attempts(self, chunk: Sequence[StoredDelivery]) -> list[int]:
        """The attempt each delivery is about to be sent as, durable when this returns."""
        ...

    async def settle(self, settled: Sequence[Settled]) -> None:
        """Record how each attempt ended."""
        ...


class LedgerDeliveries:
    """`DeliveryPort` over the ledger: a stored delivery is told the same way every time, with
    the same event id and idempotency key as the first time."""

    def __init__(
        self, store: Store, clock: Clock, framer: Framer, *, kept: int = DELIVERIES_KEPT
    ) -> None:
        self.store = store
        self.clock = clock
        self._framer = framer
        self.kept = kept
        # Deliveries decided here, each with its value made at ingest when it was kept.
        self._made: OrderedDict[tuple[str, str], Delivery | None] = OrderedDict()
        # Those of them whose reserved first attempt has not gone yet.
        self._unsent: set[tuple[str, str]] = set()
        # Settles given this turn of the loop, and the task that writes them on the next.
        self._settling: list[Settled] = []
        self._settle_batch: asyncio.Future[None] | None = None

    @property
    def framer(self) -> Framer:
        return self._framer

    @framer.setter
    def framer(self, framer: Framer) -> None:
        """A new framer (the manifest reloaded): what was kept is made again from the ledger."""
        self._framer = framer
        for key in self._made:
            self._made[key] = None

    def remember(self, decision: Decision, delivery: Delivery | None = None) -> None:
        """A delivery decided here, recorded with its first attempt reserved and not sent
        yet; `delivery` is its value made at ingest, kept for its sends (without it, it is
        made from the ledger). Past `kept` remembered, the oldest is forgotten: its first
        send is written as a second attempt, and its value is made from the ledger."""
        made = self._made
        key = (decision.event_id, decision.agent)
        made[key] = delivery
        self._unsent.add(key)
        if len(made) > self.kept:
            oldest, _ = made.popitem(last=False)
            self._unsent.discard(oldest)

    async def pending(self, agent: str) -> list[StoredDelivery]:
        return await self.store.pending(agent, PENDING_PAGE)

    async def delivery(self, stored: StoredDelivery) -> Delivery:
        """The kept value when there is one (told with the stored decision, in the mode sent);
        otherwise made from the ledger. A follow-up (a reminder, a hand-over) tells the content
        of the event it stands for, under its own id."""
        decision = stored.decision
        kept = self._made.get((decision.event_id, decision.agent))
        if kept is not None and kept.seq == stored.seq:
            return replace(kept, decision=decision)
        store = self.store
        entry = await store.entry(stored.seq)
        reminds = entry.data.get("reminds") if entry and entry.kind in FOLLOW_UP_KINDS else None
        if reminds is not None:
            entry = await entry_of(store, reminds)
        if entry is None:
            raise StoreError(
                f"delivery {stored.decision.idempotency_key} names seq {stored.seq}, "
                "which the ledger lacks"
            )
        event = event_from_data(entry.data)
        framer = self.framer
        return framer.delivery(
            event,
            stored.decision,
            entry.seq,
            framer.facts(event),
            lambda: framer.intents(event),
            parse_time(entry.ts),
            stored.seq if reminds is not None else None,
        )

    async def next_attempts(self, chunk: Sequence[StoredDelivery]) -> list[int]:
        """Attempt 1, reserved, for each delivery decided here and not sent yet (once what
        decided it has committed); the next one, noted in one transaction, for the others."""
        unsent = self._unsent
        attempts: list[int] = []
        noted: list[tuple[Decision, int]] = []
        for stored in chunk:
            decision = stored.decision
            key = (decision.event_id, decision.agent)
            if stored.attempt == 1 and key in unsent:
                unsent.discard(key)
                attempts.append(1)
            else:
                attempts.append(stored.attempt + 1)
                noted.append((decision, stored.attempt + 1))
        store = self.store
        if not noted:
            await store.durable()
            return attempts
        async with store.transaction():  # joins, and so waits for, one still open
            for decision, attempt in noted:
                await store.note_attempt(decision.event_id, decision.agent, attempt)
        return attempts

    async def settle(self, settled: Sequence[Settled]) -> None:
        """Settles given in the same turn of the loop (the answers of several agents' harnesses
        to one event's deliveries come together) share one transaction, written on the loop's
        next turn; each caller returns once it has committed and raises what it raised."""
        self._settling.extend(settled)
        batch = self._settle_batch
        if batch is None:
            batch = self._settle_batch = asyncio.ensure_future(self._write_settles())
            batch.add_done_callback(_retrieved)
        await asyncio.shield(batch)

    async def _write_settles(self) -> None:
        settled, self._settling, self._settle_batch = self._settling, [], None
        stamp = format_time(self.clock.now())
        async with self.store.transaction():
            for each in settled:
                decision = each.stored.decision
                if each.refused is None:
                    await self.store.mark_delivered(decision.event_id, decision.agent, each.attempt)
                else:
                    await self.store.mark_failed(
                        decision.event_id, decision.agent, each.refused, stamp
                    )
        for each in settled:
            decision = each.stored.decision
            key = (decision.event_id, decision.agent)
            self._made.pop(key, None)
            self._unsent.discard(key)


def _retrieved(batch: asyncio.Future[None]) -> None:
    """A batch whose callers were all cancelled leaves no unread exception behind."""
    if not batch.cancelled():
        batch.exception()
