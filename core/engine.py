"""The host's engine: ledger first, then per-agent decisions, claims, and what to send whom.

`Engine.ingest` takes one normalised event and the agent whose connection received it, makes
it durable in the ledger (deduplicated by event id), decides it for every agent that can see it
and has not had it yet, and returns the emissions for the harnesses and the outbox. The caller
owns the transaction: emissions may be sent only after it commits.

The engine is where text crosses into the host and out of it, so its `redactor` stands at both
doors: every event's text loses its secrets in `ingest`, before the ledger, a delivery or a
prompt sees it, and every outbound action's text in `queue`, before the outbox holds it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Final

from core.actions import Action, from_record, redacted, to_record
from core.attention import (
    ChatterShape,
    Context,
    answered_in_gap,
    assess,
    chatter_shape,
    constrain,
    follows_thread,
    is_late,
    revise_for_edit,
    select_responder,
)
from core.clock import Clock, format_time, parse_time
from core.codec import LEDGER_KINDS, event_from_data, event_to_data
from core.decision import Decision, Directedness, Disposition, InjectionMode, Policy, Priority
from core.deliveries import Framer, LedgerDeliveries
from core.emission import Cancel, Emission, Escalation, Queued, Typing
from core.events import AuthorKind, ChatEvent, Conversation, ConversationKind, EventKind
from core.followup import DIGEST_KIND, FollowUp
from core.intent import DEFAULT_RULES, IntentClassifier
from core.manifest import Workspace
from core.redact import Redactor
from core.signals import GlyphMap, Signal, glyph_map
from core.state import State
from core.store import ClaimResult, Store

__all__ = ["Emission", "Engine", "Outcome"]

log = logging.getLogger(__name__)

_TEXT_KINDS = (EventKind.MESSAGE, EventKind.EDIT)
# The fields of an outbound action that carry words people will read.
_OUTBOUND_TEXT = ("text", "status")
_CHAT_KINDS = frozenset(LEDGER_KINDS.values())
LEFT_KIND = "x.c2a.left"
_TYPING_LASTS = timedelta(seconds=10)
# Reading an enum member off its class costs a lookup on every use; the hot paths read these.
_MESSAGE = EventKind.MESSAGE
_EDIT = EventKind.EDIT
_DELETE = EventKind.DELETE
_TYPING = EventKind.TYPING
_THREAD = ConversationKind.THREAD
_MUST = Policy.MUST_RESPOND
_Answer = tuple[Directedness, Policy, InjectionMode, str, Priority]


@dataclass(slots=True)
class Outcome:
    """What ingesting one event did: `status` is `new` (appended to the ledger), `repeat`
    (already there: a retry, or another agent's copy) or `transient` (typing, not ledgered)."""

    status: Final[str]
    emissions: Final[list[Emission]]


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
        manifest = workspace.manifest
        self.workspace = workspace
        # By shape only unless the composition root gives one that knows the configured secrets.
        self.redactor = redactor or Redactor()
        self.store = store
        self.clock = clock
        self.classifier = classifier or _rules_for(workspace)
        self.glyphs = glyphs or glyph_map(manifest.signals)
        self.framer = Framer(workspace, self.glyphs, self.classifier)
        self.deliveries = LedgerDeliveries(store, clock, self.framer)
        self.state = State(workspace)
        self.unavailable: dict[str, datetime] = {}
        self.followup = FollowUp(self)
        # Agents whose manifest user id was found not to be their bot's (logged once each).
        self._misnamed: set[str] = set()
        # The rules' answer to plain channel chatter, per shape and agent (`_chatter`).
        self._chatter_answers: dict[ChatterShape, dict[str, _Answer]] = {}

    async def rebuild(self) -> int:
        """Fold the whole ledger into a fresh state (after a restart); returns events read."""
        self.state = State(self.workspace)
        count = 0
        async for entry in self.store.ledger():
            if entry.kind == LEFT_KIND:
                self.state.left.add((entry.data["agent"], entry.data["place"]))
                continue
            if entry.kind == DIGEST_KIND:
                self.followup.note_digest(entry)
                continue
            if entry.kind not in _CHAT_KINDS:
                continue  # the host's own records (reminders); CCCS: skip unknown kinds
            event = event_from_data(entry.data)
            self.state.note_vias(event, await self.store.receipts(event.event_id))
            stored = await self.store.deliveries(event.event_id)
            self.state.apply(event, [d.decision for d in stored])
            for delivery in stored:
                if delivery.disposition is not None:
                    self.state.note_disposition(
                        event, delivery.decision.agent, delivery.disposition
                    )
            count += 1
        for item, (agent, expires) in (await self.store.claims(self.clock.now())).items():
            self.state.note_claim(item, agent, expires)
        return count

    # ---- inbound -----------------------------------------------------------------------------

    async def ingest(self, event: ChatEvent, via: str | None = None) -> Outcome:
        """Make one event durable and decide it; returns what to send once the caller commits.
        The event's text is redacted first: nothing after this line sees a secret in it."""
        event = self.redactor.event(event)
        if event.kind is _TYPING:
            return Outcome("transient", self._typing(event, via))
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
        receivers = self._receivers(resolved, via)
        resolved = self._name_receiver(resolved, via)
        seq = await self.store.append(
            resolved.event_id,
            LEDGER_KINDS[resolved.kind],
            self._principal(resolved),
            event_to_data(resolved),
            stamp,
        )
        first = seq is not None
        for agent in receivers:
            await self.store.add_receipt(resolved.event_id, agent)
        state.note_vias(resolved, receivers)
        if seq is None:
            seq = await self.store.sequence_of(resolved.event_id) or 0
            decided = await self.store.decided_agents(resolved.event_id)
            await self._fill_text(resolved)
        else:
            decided = set()
        if resolved.kind is _DELETE:
            return first, await self._delete(resolved, first)
        target = state.target(resolved) if resolved.kind is _EDIT else None
        if target is not None and target.deleted:
            return first, []
        # A repeat is decided only for agents whose own connection is new to it: visibility
        # through membership was settled when the event first arrived.
        audience = (
            self._audience(resolved, receivers, decided)
            if first
            else [a for a in receivers if a not in decided]
        )
        ctx = Context.build(resolved, self.workspace, state, self.classifier, self.glyphs, now)
        outside = self._outside_thread(resolved, audience, ctx)
        if outside:
            # Also posted to the channel: whoever does not follow the thread meets it there.
            channel = _in_channel(resolved)
            inside = [agent for agent in audience if agent not in outside]
            decisions = await self._decide(resolved, inside, ctx)
            channel_ctx = Context.build(
                channel, self.workspace, state, self.classifier, self.glyphs, now
            )
            decisions += await self._decide(channel, outside, channel_ctx)
        else:
            decisions = await self._decide(resolved, audience, ctx)
        emissions: list[Emission] = []
        if target is not None:
            decisions, cancels = self._revise_edit(decisions, target.delivered, target.answered)
            emissions.extend(cancels)
        if decisions:
            await self.store.record_decisions(seq, decisions, stamp)
            told = dict.fromkeys(outside, channel) if outside else {}
            emissions.extend(await self._tell(resolved, told, decisions, seq, ctx, stamp))
        state.apply(resolved, decisions, first=first)
        await self._answered_in_gap(resolved, ctx, first)
        return first, emissions

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
        the fast acknowledgements and, once, a loop's escalation."""
        framer = self.framer
        facts = framer.facts(event)
        emissions: list[Emission] = []
        looped = False
        for decision in decisions:
            copy = told.get(decision.agent, event)
            emissions.append(framer.delivery(copy, decision, seq, facts, ctx.intents, ctx.now))
            if decision.policy is _MUST:  # only those get a fast acknowledgement
                emissions.extend(await self._signals(event, decision, stamp))
            looped = looped or decision.reason == "loop_limit"
        if looped:
            emissions.extend(await self._escalate_loop(event, stamp))
        return emissions

    async def _answered_in_gap(self, reply: ChatEvent, ctx: Context, first: bool) -> None:
        """A late reply, new to the ledger, answers late questions still waiting for their
        agents: each such `must_respond` becomes `may_respond`
        (`core.attention.answered_in_gap`)."""
        if not first or reply.kind is not _MESSAGE or not is_late(reply, ctx.now):
            return
        for agent in self.workspace.agent_ids:
            for delivery in await self.store.pending(agent):
                if delivery.decision.policy is not _MUST:
                    continue
                entry = await self.store.entry(delivery.seq)
                if entry is None or entry.kind != LEDGER_KINDS[_MESSAGE]:
                    continue
                question = event_from_data(entry.data)
                received = parse_time(entry.ts)
                revised = answered_in_gap(delivery.decision, question, received, reply, ctx)
                if revised is not None and await self.store.revise_pending(delivery.seq, revised):
                    self.state.note_revised(question, revised)

    async def _fill_text(self, event: ChatEvent) -> None:
        """A bot without Discord's Message Content intent receives messages blank; when a copy
        with the text arrives after a blank one, the ledger takes the text."""
        target = self.state.target(event)
        if (
            event.kind is _MESSAGE
            and event.text
            and target is not None
            and not target.text
            and not target.deleted
            and target.event_id == event.event_id
        ):
            await self.store.fill_text(event.event_id, event.text)
            target.text = event.text

    def _name_receiver(self, event: ChatEvent, via: str | None) -> ChatEvent:
        """The event, naming the agent whose connection received it when the platform vouches
        that it does: it was sent because it names that bot (`names_receiver`, a Slack
        `app_mention`), or its text names the connection's own bot user (`bot_user_id`) while
        the manifest knows no agent by that id. The receiving agent is the one the manifest
        binds to `bot_user_id`, else `via`; its manifest user id is added to the mentions, so
        the rules see the mention even when the manifest's id is not the bot's (an app
        reinstalled, an id mistyped). That mismatch is logged once per agent."""
        own = event.bot_user_id
        if not event.names_receiver and (own is None or own not in event.mentions.users):
            return event
        if event.kind not in _TEXT_KINDS:
            return event
        workspace = self.workspace
        known = workspace.agent_for(event.platform, own)
        if not event.names_receiver and known is not None:
            return event  # the text names a bot the manifest knows: the rules see it
        agent = known or (via if via in workspace.manifest.agents else None)
        me = workspace.user_id(event.platform, agent) if agent is not None else None
        if agent is None or me is None or me in event.mentions.users:
            return event
        if agent not in self._misnamed:
            self._misnamed.add(agent)
            log.warning(
                "%s agent %s: the platform delivered a mention of it, but its text names %s, "
                "not the manifest's user id %s; taken as a mention of %s (check "
                "agents.%s.%s.user_id against the bot's own id)",
                event.platform,
                agent,
                ", ".join(event.mentions.users) or "no user",
                me,
                agent,
                agent,
                event.platform,
            )
        mentions = replace(event.mentions, users=(*event.mentions.users, me))
        return replace(event, mentions=mentions)

    def _outside_thread(self, event: ChatEvent, audience: list[str], ctx: Context) -> list[str]:
        """Of a thread reply also posted to its channel, the audience that does not follow the
        thread (`follows_thread`): they are told of it as a message in the channel."""
        if not event.also_in_channel or event.conversation.kind is not _THREAD:
            return []
        return [agent for agent in audience if not follows_thread(ctx, agent)]

    def _receivers(self, event: ChatEvent, via: str | None) -> list[str]:
        """The agents whose own connections received this payload."""
        found = []
        if via is not None and via in self.workspace.manifest.agents:
            found.append(via)
        bot = self.workspace.agent_for(event.platform, event.bot_user_id)
        if bot is not None and bot not in found:
            found.append(bot)
        return found

    def _audience(self, event: ChatEvent, receivers: list[str], decided: set[str]) -> list[str]:
        """Agents that can see the event and have no decision for it yet, in manifest order."""
        state = self.state
        author = self.workspace.agent_for(event.platform, event.author.id)
        target = state.target(event) if event.kind is _EDIT else None
        seen_before = target.delivered if target is not None else {}
        members = state.members.get(event.conversation.scope, ())  # who can see it
        return [
            agent
            for agent in self.workspace.agent_ids
            if agent not in decided
            and (agent in members or agent in receivers or agent == author or agent in seen_before)
        ]

    async def _decide(self, event: ChatEvent, audience: list[str], ctx: Context) -> list[Decision]:
        shape = chatter_shape(event, ctx)
        if shape is not None:
            answers = self._chatter_answers.setdefault(shape, {})
            return [self._chatter(event, agent, answers, ctx) for agent in audience]
        assessed = {
            agent: constrain(assess(event, agent, ctx), event, agent, ctx) for agent in audience
        }
        # Only agents still free to answer after the constraints compete for the claim.
        candidates = [agent for agent, a in assessed.items() if a.candidate]
        decisions = {agent: a.decision for agent, a in assessed.items()}
        if candidates:
            holder = await self._holder(event, candidates, ctx)
            for agent in candidates:
                decision = decisions[agent]
                if agent == holder:
                    decisions[agent] = replace(
                        decision, mode=InjectionMode.BUFFERED, claimed_by=agent
                    )
                else:
                    decisions[agent] = replace(
                        decision,
                        policy=Policy.MUST_NOT_RESPOND,
                        reason="claimed_by_other",
                        claimed_by=holder,
                    )
        if event.content_withheld:
            # Without the text a model turn cannot answer it: knock, saying the text is missing.
            for agent, decision in decisions.items():
                if decision.mode in (InjectionMode.BUFFERED, InjectionMode.IMMEDIATE):
                    decisions[agent] = replace(decision, mode=InjectionMode.NOTIFY)
        return [decisions[agent] for agent in audience]

    def _chatter(
        self, event: ChatEvent, agent: str, answers: dict[str, _Answer], ctx: Context
    ) -> Decision:
        """Plain channel chatter, most of any channel's traffic: the rules decide the first
        event of each shape for each agent, and later ones of the shape reuse that answer (from
        `answers`) with their own id."""
        answer = answers.get(agent)
        if answer is not None:
            return Decision(event.event_id, agent, *answer)
        decision = constrain(assess(event, agent, ctx), event, agent, ctx).decision
        answer = (
            decision.directedness,
            decision.policy,
            decision.mode,
            decision.reason,
            decision.priority,
        )
        if decision == Decision(event.event_id, agent, *answer):  # nothing more to it
            answers[agent] = answer
        return decision

    async def _holder(self, event: ChatEvent, candidates: list[str], ctx: Context) -> str:
        """The agent holding the event's claim, selecting and claiming one if nobody does."""
        held = self.state.claim_holder(event.event_id, ctx.now)
        if held is not None:
            return held
        settings = self.workspace.settings
        chosen = select_responder(
            candidates, self.state.busy, settings.selection, self.workspace.agent_ids
        )
        result = await self.store.claim(event.event_id, chosen, ctx.now, settings.claim_ttl_ms)
        self.state.note_claim(event.event_id, result.holder, result.expires_at)
        return result.holder

    def _revise_edit(
        self,
        decisions: list[Decision],
        delivered: dict[str, Decision],
        answered: set[str],
    ) -> tuple[list[Decision], list[Emission]]:
        revised: list[Decision] = []
        cancels: list[Emission] = []
        for decision in decisions:
            prior = delivered.get(decision.agent)
            supersedes = prior.event_id if prior is not None else None
            revised.append(revise_for_edit(decision, prior, decision.agent in answered, supersedes))
            if supersedes is not None:
                cancels.append(Cancel(decision.agent, supersedes, "superseded"))
        return revised, cancels

    async def _delete(self, event: ChatEvent, first: bool) -> list[Emission]:
        """A deleted message becomes a tombstone; every agent that had it is told to drop it."""
        target = self.state.target(event)
        if target is None or not first or target.deleted:
            return []
        await self.store.tombstone(list(target.versions))
        emissions: list[Emission] = [
            Cancel(agent, decision.event_id, "deleted")
            for agent, decision in sorted(target.delivered.items(), key=self._agent_order)
        ]
        self.state.apply(event, [])
        return emissions

    def _agent_order(self, item: tuple[str, Any]) -> int:
        return self.workspace.agent_ids.index(item[0])

    def _typing(self, event: ChatEvent, via: str | None) -> list[Emission]:
        """Typing is a passing hint, not a chat event: forwarded, never put in the ledger. Each
        agent's own connection reports typing to it, so a copy goes only to the agent whose
        connection received it (to everyone who can see the conversation when none is named)."""
        resolved = self.state.resolve(event)
        receivers = self._receivers(resolved, via)
        author = self.workspace.agent_for(resolved.platform, resolved.author.id)
        until = resolved.created_at + _TYPING_LASTS
        conversation, who = resolved.conversation, resolved.author.id
        targets = receivers or self._audience(resolved, receivers, set())
        return [Typing(agent, conversation, who, until) for agent in targets if agent != author]

    async def _signals(self, event: ChatEvent, decision: Decision, stamp: str) -> list[Emission]:
        """The fast acknowledgement: `seen` on a must_respond event, `queued` when over budget,
        `blocked` while the agent's harness is down."""
        if decision.policy is not _MUST or event.kind is not _MESSAGE:
            return []
        if decision.agent in self.unavailable:
            signal = Signal.BLOCKED
        elif decision.reason == "over_budget":
            signal = Signal.QUEUED
        elif self.workspace.settings.seen_signal and decision.mode in (
            InjectionMode.BUFFERED,
            InjectionMode.IMMEDIATE,
        ):
            signal = Signal.SEEN
        else:
            return []
        key = f"{decision.idempotency_key}:react:{signal.value}"
        action = {
            "action": "react",
            "agent": decision.agent,
            "signal": signal.value,
            "emoji": self.glyphs.native(event.platform, signal),
            "platform": event.platform,
            "conversation": event.conversation.id,
            "messageId": event.message_id,
            "eventId": event.event_id,
            "idempotencyKey": key,
        }
        if not await self.queue(key, decision.agent, action, stamp):
            return []
        return [Queued(decision.agent, from_record(action))]

    async def _escalate_loop(self, event: ChatEvent, stamp: str) -> list[Emission]:
        """A bot-to-bot loop that hit the limit is escalated to the lead once per run."""
        key = event.conversation.key
        if key in self.state.escalated:
            return []
        lead = self.workspace.lead
        if not await self.store.record_escalation(lead, "loop_limit", key, event.event_id, stamp):
            return []
        return [Escalation(lead, "loop_limit", key, event.event_id)]

    def _principal(self, event: ChatEvent) -> str:
        agent = self.workspace.agent_for(event.platform, event.author.id)
        if agent is not None or event.author.kind is AuthorKind.AGENT:
            return f"agent:{agent}"
        return f"{event.platform}:{event.author.id}"

    # ---- out ---------------------------------------------------------------------------------

    async def queue(self, key: str, agent: str, action: Mapping[str, Any], at: str) -> bool:
        """Put one outbound action in the outbox under its idempotency key, its text redacted
        first, so no model can echo a secret into a channel; False when the key is there.
        Every outbound action goes this way, never to the store directly."""
        clean = dict(action)
        for field in _OUTBOUND_TEXT:
            value = clean.get(field)
            if isinstance(value, str):
                clean[field] = self.redactor.text(value)
        return await self.store.put_outbox(key, agent, clean, at)

    async def queue_action(self, action: Action, at: str) -> bool:
        """Put one typed outbound action in the outbox under its key, its words redacted
        first (see `queue`); False when the key is there."""
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
        self.unavailable.setdefault(agent, self.clock.now())

    def mark_available(self, agent: str) -> None:
        self.unavailable.pop(agent, None)

    async def sweep(self) -> list[Emission]:
        """Follow up on what nobody did: reminders, escalations, notices while a harness is
        down, and digests (`core.followup`). Run it inside a transaction every few seconds;
        returns what to send once that commits."""
        return await self.followup.sweep()

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
            self.state.note_disposition(event, agent, disposition)
        return recorded

    async def leave(self, agent: str, place: str) -> None:
        """The agent leaves a conversation (`<channel>` or `<channel>/<thread>`) until it is
        named or DMed there again; kept in the ledger, so it outlasts a restart."""
        now = self.clock.now()
        record_id = f"left:{agent}:{place}@{format_time(now)}"
        data = {"agent": agent, "place": place}
        await self.store.append(record_id, LEFT_KIND, f"agent:{agent}", data, format_time(now))
        self.state.left.add((agent, place))

    async def event(self, event_id: str) -> ChatEvent | None:
        """An event as the ledger holds it (tombstoned text stays erased)."""
        seq = await self.store.sequence_of(event_id)
        entry = await self.store.entry(seq) if seq is not None else None
        return event_from_data(entry.data) if entry is not None else None


def _in_channel(event: ChatEvent) -> ChatEvent:
    """A thread reply as the message it also is in the thread's channel."""
    channel = Conversation(id=event.conversation.scope, kind=ConversationKind.CHANNEL)
    return replace(event, conversation=channel)


def _rules_for(workspace: Workspace) -> IntentClassifier:
    overrides = {
        name: override.model_dump() for name, override in workspace.manifest.intent.items()
    }
    return DEFAULT_RULES.with_overrides(overrides) if overrides else DEFAULT_RULES
