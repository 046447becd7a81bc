"""The host's engine: ledger first, then per-agent decisions, claims, and what to send whom.

`Engine.ingest` takes one normalised event and the agent whose connection received it, makes
it durable in the ledger (deduplicated by event id), decides it for every agent that can see it
and has not had it yet, and returns the emissions for the harnesses and the outbox. The caller
owns the transaction: emissions may be sent only after it commits.

The engine's memory (`State`) is a fold of the ledger, changed in the caller's transaction
(`Engine.transaction`); a rollback does not undo it, so the next `ingest` after one folds the
ledger afresh first (else a message taken again would count twice, or follow itself).

The engine is where text crosses into the host and out of it, so its `redactor` stands at both
doors: every event's text loses its secrets in `ingest`, before the ledger, a delivery or a
prompt sees it, and every outbound action's text in `queue_action`, before the outbox does.

It is over 400 lines, as the place where the ledger, the memory and the decisions meet (so
are `core.state`, the memory, and `core.store`, the storage seam); what can stand alone is in
its own module (`core.ledger_fold`, `core.deciding`, `core.changes`, `core.followup`,
`core.handover`, `core.agent_records`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Final

from core.acknowledgement import BlockedMarks, acknowledged, acknowledgement
from core.action_records import to_record
from core.actions import Action, redacted
from core.agent_records import decided_later, disposed, left
from core.approvals import Approvals
from core.attention_context import Context
from core.audience import Audience, in_channel, outside_thread
from core.availability import Unavailable
from core.budget_notice import budget_notice
from core.changes import (
    delete_message,
    edit_of_deleted,
    fill_text,
    revise_edit,
    supersede_edited,
    typing_hints,
)
from core.clock import Clock, format_time
from core.codec import LEDGER_KINDS, event_from_data, event_to_data
from core.constraints import budget_spent
from core.copies import DecidedCopies
from core.deciding import Decider
from core.decision import Decision, Disposition, Policy
from core.deliveries import Framer, LedgerDeliveries
from core.emission import Cancel, Emission, Outcome, Queued
from core.events import ChatEvent, EventKind
from core.followup import FollowUp
from core.handover import while_down
from core.intent import IntentClassifier, rules_for
from core.ledger_fold import few_collections, fold_ledger
from core.manifest import Workspace
from core.memory_snapshot import readable, snapshot_of
from core.redact import Redactor
from core.retention import outlived
from core.signals import GlyphMap
from core.state import State
from core.state_records import message_of
from core.store import ClaimResult, Store, entry_of

__all__ = ["Engine"]

# Reading an enum member off its class costs a lookup on every use; the hot paths read these.
_MESSAGE = EventKind.MESSAGE
_EDIT = EventKind.EDIT
_DELETE = EventKind.DELETE
_TYPING = EventKind.TYPING
WORK_ENDED: Final = "left_conversation"  # the cancellation a harness knows for work it drops


class Engine:
    """Decides every inbound event of one workspace for each of its agents."""

    def __init__(
        self,
        workspace: Workspace,
        store: Store,
        clock: Clock,
        *,
        classifier: IntentClassifier | None = None,
        glyphs: GlyphMap | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.workspace = workspace
        # By shape only unless the composition root gives one that knows the configured secrets.
        self.redactor = redactor or Redactor(shapes=workspace.secrets)
        self.store = store
        self.clock = clock
        self.classifier = classifier or rules_for(workspace.intent_overrides, workspace.markup)
        self.glyphs = glyphs or workspace.glyphs
        self.framer = Framer(workspace, self.glyphs, self.classifier)
        self.deliveries = LedgerDeliveries(store, clock, self.framer)
        self.state = State(workspace)
        self.folded = 0  # the last ledger sequence number in `state`
        self._stale = False  # a transaction that may have changed the memory was rolled back
        # How far retention has pruned the ledger: an event from before is not taken.
        self.pruned_before: datetime | None = None
        self.unavailable = Unavailable()
        self.blocked = BlockedMarks()
        self.approvals = Approvals(clock, workspace.approvers())
        self.followup = FollowUp(
            store,
            clock,
            workspace,
            self.classifier,
            unavailable=self.unavailable,
            redeliver=self.deliveries.delivery,
            queue=self.queue_action,
            event=self.event,
            take_turn=self.take_turn,
            muted=lambda agent: self.state.is_muted(agent, clock.now()),
            glyphs=self.glyphs,
        )
        self.audience = Audience(workspace)
        self.decider = Decider(workspace, store, self.unavailable)
        self.copies = DecidedCopies()

    async def rebuild(self) -> int:
        """Fold the whole ledger into fresh memory (after a start, or once the memory stopped
        matching the ledger); returns events read. Who is in which channel, as the platforms'
        lookups said (not in the ledger), is kept. The new memory replaces the old only once
        it is whole, so nothing deciding or answering meanwhile reads half of it."""
        state = State(self.workspace)
        state.members = {scope: set(agents) for scope, agents in self.state.members.items()}
        return await self._fold_anew(state, 0)

    async def start(self) -> int:
        """The memory at a start: the snapshot the last clean stop saved, with the records after
        it folded in (`core.memory_snapshot`), else the whole ledger folded (`rebuild`);
        returns the events folded."""
        async with self.store.transaction():
            snapshot = await self.store.take_snapshot()
        saved = None if snapshot is None else readable(snapshot, self.workspace)
        if snapshot is None or saved is None:
            return await self.rebuild()
        state, self.followup.digested = saved
        return await self._fold_anew(state, snapshot.seq)

    async def _fold_anew(self, state: State, after: int) -> int:
        """Fold the records after `after` into `state`, a memory being built (at a start, or
        again), which then replaces the engine's: whole, never half-built. Returns events read."""
        with few_collections():
            count, folded = await self._fold(state, after)
        self.state, self.folded, self.copies, self._stale = state, folded, DecidedCopies(), False
        self.note_pruned(await self.store.pruned_before())
        return count

    def note_pruned(self, before: datetime | None) -> None:
        """The ledger holds nothing retention may drop from before `before` (read from the store
        at every fold, told by the retention's loop after each round): an event from before it
        is not taken (`core.retention.outlived`)."""
        if before is not None and (self.pruned_before is None or before > self.pruned_before):
            self.pruned_before = before

    async def save_snapshot(self) -> bool:
        """Save the memory for the next start (`start`): at a clean stop, once nothing else
        writes. False, and nothing saved, when the memory may not match the ledger. Taken in
        the transaction that saves it: a transaction open meanwhile is joined, and should it
        roll back what the memory already holds, nothing is saved either."""
        async with self.store.transaction():
            if self._stale:
                return False
            snapshot = snapshot_of(self.state, self.followup.digested, self.folded)
            await self.store.save_snapshot(snapshot)
        return True

    async def catch_up(self) -> int:
        """Where other processes write the ledger too (`Store.shared`), fold in the events they
        committed since the last one this engine folded, and their claims, so this engine
        decides with the whole ledger, whichever process took each event. Call it in the
        transaction that decides (which holds the ledger: `Store.shared`); returns events read."""
        count, self.folded = await self._fold(self.state, self.folded)
        return count

    async def _fold(self, state: State, after: int) -> tuple[int, int]:
        now = self.clock.now()
        return await fold_ledger(self.store, state, self.followup, self.decider, after, now)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """The store's transaction, for whatever changes the engine's memory with the ledger:
        if it does not commit, the next `ingest` folds the memory afresh (`rebuild`)."""
        try:
            async with self.store.transaction():
                yield
        except BaseException:
            self._stale = True
            raise

    # ---- inbound -----------------------------------------------------------------------------

    async def ingest(self, event: ChatEvent, via: str | None = None) -> Outcome:
        """Make one event durable and decide it; returns what to send once the caller commits.
        The event's text is redacted first: nothing after this line sees a secret in it."""
        event = self.redactor.event(event)
        if event.kind is _TYPING:
            return Outcome("transient", self._typing(event, via))
        if outlived(event, self.pruned_before):
            return Outcome("repeat", [])  # older than what is kept: had and dropped, or never
        if self._stale:
            await self.rebuild()
        elif self.store.shared:
            await self.catch_up()
        if event.batch:
            return await self._ingest_batch(event.batch, via)
        first, emissions = await self._ingest(event, via)
        return Outcome("new" if first else "repeat", emissions)

    async def _ingest_batch(self, batch: tuple[ChatEvent, ...], via: str | None) -> Outcome:
        """Several events one payload reported together (a bulk delete), each taken exactly as
        if it had arrived alone; `new` when any of them is."""
        emissions: list[Emission] = []
        any_first = False
        for event in batch:
            first, found = await self._ingest(event, via)
            any_first = any_first or first
            emissions.extend(found)
        return Outcome("new" if any_first else "repeat", emissions)

    async def _ingest(self, event: ChatEvent, via: str | None) -> tuple[bool, list[Emission]]:
        now = self.clock.now()
        stamp = format_time(now)
        state = self.state
        resolved = state.resolve(event)
        audience = self.audience
        receivers = audience.receivers(resolved, via)
        resolved = audience.name_receiver(resolved, via)
        seq = await self.store.append(
            resolved.event_id,
            LEDGER_KINDS[resolved.kind],
            audience.principal(resolved),
            event_to_data(resolved),
            stamp,
        )
        first = seq is not None
        if seq is not None:
            self.folded = seq
        for agent in receivers:
            await self.store.add_receipt(resolved.event_id, agent)
        state.note_vias(resolved, receivers)
        if seq is None:
            await fill_text(resolved, state, self.store)  # a later copy may bring the text
            if self.copies.covers(resolved.event_id, receivers):
                return first, []  # a copy for agents already decided: nothing to decide
            decided = await self.store.decided_agents(resolved.event_id)
            if decided.issuperset(receivers):
                return first, []  # the same, decided before this process began (a replay)
            seq = await self.store.sequence_of(resolved.event_id) or 0
        else:
            decided = set()
        if resolved.kind is _DELETE:
            return first, await self._delete(resolved, stamp) if first else []
        target = state.target(resolved) if resolved.kind is _EDIT else None
        if resolved.kind is _EDIT and await edit_of_deleted(resolved, target, self.store):
            await self.store.tombstone([resolved.event_id])  # a delete erases what comes late too
            return first, []
        # A repeat is decided only for agents whose own connection is new to it: visibility
        # through membership was settled when the event first arrived.
        told = (
            audience.seeing(resolved, state, receivers, decided)
            if first
            else [a for a in receivers if a not in decided]
        )
        decide = self.decider.decide
        ctx = Context.build(resolved, self.workspace, state, self.classifier, self.glyphs, now)
        outside = outside_thread(resolved, told, ctx)
        if outside:
            # Also posted to the channel: whoever does not follow the thread meets it there.
            channel = in_channel(resolved)
            inside = [agent for agent in told if agent not in outside]
            decisions = await decide(resolved, inside, ctx, state)
            channel_ctx = Context.build(
                channel, self.workspace, state, self.classifier, self.glyphs, now
            )
            decisions += await decide(channel, outside, channel_ctx, state)
        else:
            decisions = await decide(resolved, told, ctx, state)
        emissions: list[Emission] = []
        if target is not None:
            decisions, cancels = revise_edit(decisions, target.delivered, target.answered)
            emissions.extend(cancels + await supersede_edited(cancels, self.store, state, stamp))
        if decisions:
            await self.store.record_decisions(seq, decisions, stamp, reserve=True)
            copies = dict.fromkeys(outside, channel) if outside else {}
            emissions.extend(await self._tell(resolved, copies, decisions, seq, ctx, stamp))
        await self._remember(resolved, decisions, first, seq, ctx)
        return first, emissions

    async def _remember(
        self, event: ChatEvent, decisions: list[Decision], first: bool, seq: int, ctx: Context
    ) -> None:
        """Fold an event and its decisions into the memory. Where other processes share the
        ledger, decisions on a later copy are also recorded for their memories (`catch_up`;
        this one has them, so it folds past the record)."""
        state = self.state
        state.apply(event, decisions, first=first)
        agents = [d.agent for d in decisions]
        if first:
            self.copies.note(event.event_id, agents)
        elif agents and self.store.shared:
            later = decided_later(event.event_id, agents, format_time(ctx.now))
            self.folded = await self.store.append(*later) or self.folded
        self.decider.note_question(event, seq, decisions, ctx.now, state)
        await self.decider.answered_in_gap(event, ctx, first, state)

    async def _tell(
        self,
        event: ChatEvent,
        told: dict[str, ChatEvent],
        decisions: list[Decision],
        seq: int,
        ctx: Context,
        stamp: str,
    ) -> list[Emission]:
        """Each agent's delivery of a decided event (of its channel copy for those in `told`),
        the fast acknowledgements, the end of what an agent told to stop owes there and, once,
        a loop's escalation."""
        framer = self.framer
        facts = framer.facts(event)
        emissions: list[Emission] = []
        looped = False
        for decision in decisions:
            copy = told.get(decision.agent, event)
            delivery = framer.delivery(copy, decision, seq, facts, ctx.intents, ctx.now)
            # A channel copy is made from the ledger, as the reply it is.
            self.deliveries.remember(decision, delivery if copy is event else None)
            emissions.append(delivery)
            if acknowledged(decision):  # only those get a fast acknowledgement
                emissions.extend(await self._signals(event, decision, stamp))
            elif decision.reason == "stop":  # what the agent owes here ends with it
                why = f"stopped by {event.author.id}"
                emissions.extend(await self.end_work(decision.agent, why, event.conversation.key))
            looped = looped or decision.reason == "loop_limit"
        if looped:
            emissions.extend(await self.followup.escalate_loop(event, self.state.escalated, stamp))
        return emissions

    async def _delete(self, event: ChatEvent, stamp: str) -> list[Emission]:
        """A delete's tombstones, settled deliveries and cancellations (`core.changes`)."""
        return await delete_message(event, self.state, self.store, self.workspace.agent_ids, stamp)

    def _typing(self, event: ChatEvent, via: str | None) -> list[Emission]:
        """Typing is a passing hint, not a chat event: forwarded, never put in the ledger."""
        resolved = self.state.resolve(event)
        targets = self.audience.typing_targets(resolved, self.state, via)
        author = self.workspace.agent_for(resolved.platform, resolved.author.id)
        return typing_hints(resolved, targets, author)

    async def _signals(self, event: ChatEvent, decision: Decision, stamp: str) -> list[Emission]:
        """The fast acknowledgement (`core.acknowledgement`) and the notice of a turn budget
        reached (`core.budget_notice`), each once in the outbox."""
        down, seen = decision.agent in self.unavailable, self.workspace.settings.seen_signal
        react = acknowledgement(event, decision, self.glyphs, down=down, seen=seen)
        counted = self.state.turns.get((decision.agent, event.author.id), ())
        budget = self.workspace.budget(decision.agent)
        notice = budget_notice(event, decision, counted, budget, self.clock.now())
        queued: list[Emission] = []
        for action in (react, notice):
            if action is not None and await self.queue_action(action, stamp):
                self.blocked.note(decision, action)
                queued.append(Queued(decision.agent, action))
        return queued

    # ---- out ---------------------------------------------------------------------------------

    async def queue_action(self, action: Action, at: str) -> bool:
        """Put one outbound action in the outbox under its key, its words redacted first, so
        no model can echo a secret into a channel; False when the key is there. Every outbound
        action goes this way, never to the store directly."""
        clean = redacted(action, self.redactor.text)
        return await self.store.put_outbox(clean.key, clean.agent, to_record(clean), at)

    # ---- to the harnesses --------------------------------------------------------------------

    def note_members(self, scope: str, agents: set[str]) -> None:
        """Agents a platform lookup says are in a channel (kept until the next start, when the
        lookup is made again; events and receipts keep it current meanwhile)."""
        self.state.members.setdefault(scope, set()).update(agents)

    def mark_unavailable(self, agent: str) -> None:
        """The agent's harness or model is down: must_respond events get `blocked`, and the
        people waiting get a short notice after `notice_after_ms`."""
        self.unavailable.down(agent, self.clock.now())

    def mark_available(self, agent: str) -> None:
        self.unavailable.up(agent)

    async def sweep(self) -> list[Emission]:
        """Follow up on what nobody did, inside a transaction every few seconds; returns what
        to send once that commits. Each `blocked` placed while an agent was down that is up
        again becomes `seen` or is taken off (`core.acknowledgement.BlockedMarks`), the
        questions of an agent that is down show 🚧 or go to another (`core.handover`), then
        reminders, escalations, notices while a harness is down, and digests (`core.followup`).
        Where other processes write the ledger too, what they committed is folded in first,
        as before deciding an event: a mute one of them recorded holds this one's reminders.
        The memory lets go of the claims expired by now."""
        if self.store.shared and not self._stale:
            await self.catch_up()
        self.state.forget_expired_claims(self.clock.now())
        stamp = format_time(self.clock.now())
        seen = self.workspace.settings.seen_signal
        lifted = self.blocked.lifted(self.unavailable, self.glyphs, seen=seen)
        emissions: list[Emission] = [
            Queued(action.agent, action)
            for action in lifted
            if await self.queue_action(action, stamp)
        ]
        return emissions + await while_down(self) + await self.followup.sweep()

    async def claim(self, agent: str, event_id: str) -> tuple[ClaimResult, list[Emission]]:
        """An agent claims an event; on success the other agents that were offered it are told
        (`claimed_by_other`). Two racing claims give one holder."""
        now = self.clock.now()
        result = await self.store.claim(event_id, agent, now, self.workspace.settings.claim_ttl_ms)
        self.state.note_claim(event_id, result.holder, result.expires_at)
        if not result.granted:
            return result, []
        others: list[Emission] = [
            Cancel(d.decision.agent, event_id, "claimed_by_other")
            for d in await self.store.deliveries(event_id)
            if d.decision.agent != agent and d.decision.policy is not Policy.MUST_NOT_RESPOND
        ]
        return result, others

    async def dispose(
        self, agent: str, event_id: str, disposition: Disposition, reason: str = ""
    ) -> bool:
        """Record how an agent ended an event; False when the agent never had it."""
        stamp = format_time(self.clock.now())
        reason = self.redactor.text(reason)  # the model's own words
        recorded = await self.store.set_disposition(event_id, agent, disposition, reason, stamp)
        event = await self.event(event_id) if recorded else None
        if event is not None:
            self.state.note_disposition(event_id, message_of(event), agent, disposition)
            if self.store.shared:  # for the other processes' memories (`catch_up`)
                await self.store.append(*disposed(event, agent, disposition, stamp))
        return recorded

    def owed(self, agent: str) -> list[str]:
        """The events `agent` owes an answer and has not ended (`Decision.owes_answer`)."""
        return [e for (e, a) in self.state.obligations if a == agent]

    async def end_work(self, agent: str, why: str, place: str | None = None) -> list[Emission]:
        """End each event `agent` owes an answer, in the conversation whose key is `place` or
        everywhere: `ignored` with `why`, so no reminder chases it, and a `Cancel` each so its
        harness drops it (a turn left with nothing to answer stops). In the caller's
        transaction; returns the cancellations, to send once that commits."""
        ended: list[Emission] = []
        for event_id in self.owed(agent):
            if place is not None:
                event = await self.event(event_id)
                if event is None or event.conversation.key != place:
                    continue
            await self.dispose(agent, event_id, Disposition.IGNORED, why)
            ended.append(Cancel(agent, event_id, WORK_ENDED))
        return ended

    async def leave(self, agent: str, place: str) -> None:
        """The agent leaves a conversation (`<channel>` or `<channel>/<thread>`) until it is
        named or DMed there again; kept in the ledger, so it outlasts a restart."""
        await self.store.append(*left(agent, place, self.clock.now()))
        self.state.left.add((agent, place))

    def take_turn(self, agent: str, person: str) -> bool:
        """Count a turn of `person`'s budget with `agent` now, if one is free (`core.followup`
        takes up what they asked over it)."""
        now = self.clock.now()
        if budget_spent(self.state, self.workspace, agent, person, now):
            return False
        self.state.note_turn(agent, person, now)
        return True

    async def event(self, event_id: str) -> ChatEvent | None:
        """An event as the ledger holds it (tombstoned text stays erased)."""
        entry = await entry_of(self.store, event_id)
        return event_from_data(entry.data) if entry is not None else None
