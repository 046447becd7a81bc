"""The host's follow-ups on what nobody did: reminders and escalations of questions left
unanswered (`must_respond` events, and role questions the host picked an agent to answer), the
escalation of a bot loop (`escalate_loop`), digests, and the notices that tell people, in an
agent's name, that its harness is down, that no one took up their question, or that a loop of
agents stopped (`core.notices`). A reminder, like a hand-over (`core.handover`) and an
escalation to the lead, is a record that stands for an earlier event under an id of its own
(`core.follow_up_records`).

Everything here but `escalate_loop` (run as the line that reached the loop limit is taken in)
runs from `Engine.sweep`, on the engine's clock, inside the caller's transaction, and keeps its
progress in the ledger (reminder and digest records, delivery statuses), so a restart neither
repeats nor forgets a follow-up. It takes the few parts of the engine it uses (the ledger, the
clock, the workspace and its glyphs, and how to redeliver, queue and look up an event, take a
turn of a person's budget and tell a muted agent), never the engine itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from core import notices
from core.acknowledgement import acknowledgement, taken_back
from core.actions import Action, Post, reaction_key
from core.clock import Clock, format_time
from core.decision import Decision, Directedness, InjectionMode, Policy, Priority
from core.digest import DigestItem, summarise
from core.emission import Delivery, Emission, Escalation, Queued
from core.events import ChatEvent, EventKind
from core.follow_up_records import (
    BUDGET_TURN,
    ESCALATED,
    ESCALATION_KIND,
    ESCALATION_SUFFIX,
    REMINDER_KIND,
    REMINDER_SUFFIX,
    follow_up_data,
    question_of,
)
from core.guards import ANSWERED, UNANSWERED
from core.intent import IntentClassifier, topic
from core.manifest import Workspace
from core.signals import GlyphMap, Signal
from core.store import AuditLog, Deliveries, Ledger, LedgerEntry, OutboxStore, StoredDelivery

__all__ = [
    "DIGEST_KIND",
    "FollowUp",
    "FollowUpStore",
]

DIGEST_KIND = "x.c2a.digest"
# The reactions a person reads as the agent's verdict on what they asked (spec 001).
_VERDICTS = (Signal.DONE, Signal.DECLINED, Signal.AGREE)


# What an agent is told of a stored delivery (`LedgerDeliveries.delivery`).
Redeliver = Callable[[StoredDelivery], Awaitable[Delivery]]
# Put an outbound action in the outbox, redacted, once per key (`Engine.queue_action`).
Queue = Callable[[Action, str], Awaitable[bool]]
# An event as the ledger holds it (`Engine.event`).
FindEvent = Callable[[str], Awaitable[ChatEvent | None]]
# Count a turn of a person's budget with an agent now, if one is free (`Engine.take_turn`).
TakeTurn = Callable[[str, str], bool]
# Whether an agent is muted now (`core.mutes`): it gets no new turn, a follow-up's neither.
Muted = Callable[[str], bool]


class FollowUpStore(Ledger, Deliveries, AuditLog, OutboxStore, Protocol):
    """The parts of the store follow-ups read and write: the ledger (reminder and digest
    records), deliveries (what is overdue, pending, seen), escalations, and the outbox (which
    acknowledgement a question got)."""


@dataclass(slots=True)
class FollowUp:
    """One engine's follow-ups. `unavailable` is the engine's own record of agents whose
    harness is down and since when, read at each sweep."""

    store: FollowUpStore
    clock: Clock
    workspace: Workspace
    classifier: IntentClassifier
    unavailable: Mapping[str, datetime]
    redeliver: Redeliver
    queue: Queue
    event: FindEvent
    take_turn: TakeTurn
    muted: Muted
    glyphs: GlyphMap
    # Per agent: when its last digest was made (None: read back from the ledger) and the
    # sequence number it went up to; kept in the memory's snapshot (`core.memory_snapshot`).
    digested: dict[str, tuple[datetime | None, int]] = field(default_factory=dict, init=False)

    def note_digest(self, entry: LedgerEntry) -> None:
        """A digest record read back from the ledger: its agent's items are summarised. When
        it was made is kept where this memory knows it (the record is this process's own,
        folded again where several share the ledger), so the next digest keeps its period."""
        agent = entry.data["event_id"].split(":")[1]
        since, through = self.digested.get(agent, (None, 0))
        self.digested[agent] = (since, max(through, entry.seq))

    async def sweep(self) -> list[Emission]:
        """Chase the questions nobody answered by their deadline (`must_respond`, and a role or
        room question the host picked an agent to answer: `Decision.owes_answer`): the
        responsible agent gets one reminder (a new event, reason `reminder`, that `reminds` the
        original); an unanswered reminder is escalated to the lead, never broadcast. A question
        held over its asker's turn budget (reason `over_budget`) is reminded only once the
        budget has a turn free, with the asker's other held questions, in one turn it counts. A
        muted agent is reminded once its mute ends. Also the notices while a harness is down,
        and the periodic digests."""
        now = self.clock.now()
        cutoff = format_time(now - timedelta(milliseconds=self.workspace.settings.deadline_ms))
        stamp = format_time(now)
        emissions: list[Emission] = []
        waiting: set[tuple[str, str]] = set()  # (agent, asker) with questions held
        for delivery in await self.store.overdue(cutoff):
            decision = delivery.decision
            if decision.agent in self.unavailable:
                continue  # known down: its people get the notice below, not a reminder
            if decision.reason == "reminder":
                emissions.extend(await self._escalate_unanswered(delivery, stamp))
            elif self.muted(decision.agent):
                continue  # no new turn until the mute ends: reminded then
            elif decision.reason == "over_budget" and (asker := await self._asker(decision)):
                waiting.add((decision.agent, asker))
            else:
                emissions.extend(await self._remind(delivery, stamp))
        emissions.extend(await self._take_up(waiting, stamp))
        emissions.extend(await self._digests(now, stamp))
        wait = timedelta(milliseconds=self.workspace.settings.notice_after_ms)
        for agent, since in list(self.unavailable.items()):
            if now - since >= wait:
                emissions.extend(await self._notices(agent, stamp))
        return emissions

    async def _digests(self, now: datetime, stamp: str) -> list[Emission]:
        """Every `digest_period_ms`, one summary per agent and conversation of what reached the
        agent as `digest` since its last summary, delivered as its own event: injected, and
        `must_not_respond` (a digest item is never addressed to the agent)."""
        period = timedelta(milliseconds=self.workspace.settings.digest_period_ms)
        emissions: list[Emission] = []
        for agent in self.workspace.agent_ids:
            since, through = self.digested.get(agent, (None, 0))
            if (since is not None and now - since < period) or self.muted(agent):
                continue  # a muted agent's items wait for the digest after its mute
            rows = await self.store.seen_by(agent, after_seq=through, mode="digest", limit=1000)
            self.digested[agent] = (now, max([through, *(e.seq for e, _ in rows)]))
            by_place: dict[str, list[tuple[LedgerEntry, StoredDelivery]]] = {}
            for entry, delivery in rows:
                if entry.kind == DIGEST_KIND:
                    continue  # its own last summary, delivered as `digest` too: not an item
                by_place.setdefault(entry.data["conversation"]["id"], []).append((entry, delivery))
            for place, items in by_place.items():
                emissions.extend(await self._digest(agent, place, items, stamp))
        return emissions

    async def _digest(
        self,
        agent: str,
        place: str,
        items: list[tuple[LedgerEntry, StoredDelivery]],
        stamp: str,
    ) -> list[Emission]:
        folded = [
            DigestItem(entry.id, entry.data["author"]["id"], self._topic(entry.data))
            for entry, _ in items
        ]
        first, last = items[0][0], items[-1][0]
        text = summarise(place, folded, first.data["created_at"][:19] + "Z", stamp)
        digest_id = f"digest:{agent}:{place}:{last.seq}"
        data = {
            "event_id": digest_id,
            "kind": "message",
            "platform": first.data["platform"],
            "workspace_id": first.data["workspace_id"],
            "conversation": {"id": place, "kind": "system"},
            "author": {"id": "c2a", "kind": "bot"},
            "created_at": stamp,
            "text": text,
            "digest_of": [item.event_id for item in folded],
        }
        decision = Decision(
            digest_id,
            agent,
            Directedness.AMBIENT,
            Policy.MUST_NOT_RESPOND,
            InjectionMode.DIGEST,
            "digest",
            Priority.LOW,
        )
        return await self._deliver_new(DIGEST_KIND, data, decision, stamp)

    def _topic(self, data: dict[str, Any]) -> str:
        text = str(data.get("text", ""))
        intents = self.classifier.classify(text, str(data.get("platform", "")))
        return topic(intents, has_files=bool(data.get("files")))

    async def _notices(self, agent: str, stamp: str) -> list[Emission]:
        """A short notice, once per event, to people waiting on an agent whose harness is down:
        what it was never told, and what it was told and could not answer (its model down),
        of what it owes an answer (a role question whose responder it is, too)."""
        emissions: list[Emission] = []
        held = [d for d in await self.store.overdue(stamp) if d.decision.agent == agent]
        for delivery in [*await self.store.pending(agent), *held]:
            decision = delivery.decision
            if (
                not decision.owes_answer
                or decision.reason == "reminder"
                or delivery.disposition not in UNANSWERED  # handed over, or deleted
            ):
                continue
            key = f"{decision.idempotency_key}:notice"
            emissions.extend(await self._notice(decision, key, notices.UNAVAILABLE, stamp))
        return emissions

    async def _notice(self, asked: Decision, key: str, text: str, stamp: str) -> list[Emission]:
        """`text`, from `asked`'s agent to the person who asked it, in reply to the question,
        once (under `key`); nothing where the question is no message (gone, or a reaction)."""
        event = await self.event(asked.event_id)
        if event is None or event.kind is not EventKind.MESSAGE:
            return []
        return await self._say(notices.notice(asked.agent, event, key, text), stamp)

    async def _say(self, post: Post, stamp: str) -> list[Emission]:
        return [Queued(post.agent, post)] if await self.queue(post, stamp) else []

    async def _take_up(self, waiting: set[tuple[str, str]], stamp: str) -> list[Emission]:
        """The questions each (agent, asker) of `waiting` holds over the asker's budget, once it
        has a turn free: reminded together, so the harness gathers them into one turn, which
        counts against the budget. Those held less than the answer deadline go with them."""
        taken = {(agent, asker) for agent, asker in waiting if self.take_turn(agent, asker)}
        if not taken:
            return []
        emissions: list[Emission] = []
        counted: set[tuple[str, str]] = set()
        for delivery in await self.store.overdue(stamp):  # held however short a while
            decision = delivery.decision
            if decision.reason != "over_budget":
                continue
            event = await self.event(decision.event_id)
            pair = (decision.agent, event.author.id if event is not None else "")
            if event is not None and pair in taken:
                emissions.extend(
                    await self._remind(delivery, stamp, counts_turn=pair not in counted)
                )
                emissions.extend(await self._unqueue(event, decision, stamp))
                counted.add(pair)
        return emissions

    async def _unqueue(self, event: ChatEvent, decision: Decision, stamp: str) -> list[Emission]:
        """The `queued` (🕐) on a held question its turn takes up now taken off, and `seen` (👀)
        put in its place where the workspace shows it, as a question taken at once has it."""
        queued = acknowledgement(event, decision, self.glyphs, down=False, seen=False)
        if queued is None or not await self.store.outbox_has(queued.key):
            return []  # it got no 🕐 (its agent was down then: 🚧, lifted as such)
        taken = replace(decision, reason="reminder", mode=InjectionMode.BUFFERED)
        seen = self.workspace.settings.seen_signal
        swap = [
            taken_back(queued, Signal.QUEUED, f"{queued.key}:lifted"),
            acknowledgement(event, taken, self.glyphs, down=False, seen=seen),
        ]
        return [
            Queued(action.agent, action)
            for action in swap
            if action is not None and await self.queue(action, stamp)
        ]

    async def _asker(self, decision: Decision) -> str | None:
        """Who asked the question `decision` is about, while the ledger holds it."""
        event = await self.event(decision.event_id)
        return event.author.id if event is not None else None

    async def _remind(
        self, delivery: StoredDelivery, stamp: str, *, counts_turn: bool = False
    ) -> list[Emission]:
        """One reminder of `delivery`'s event; `counts_turn`: its record stands for the turn
        a catch-up of held questions counts against its asker's budget (`BUDGET_TURN`), so a
        restart counts it again."""
        original = delivery.decision
        reminder_id = f"{original.event_id}{REMINDER_SUFFIX}"
        data = await follow_up_data(self.store, delivery, reminder_id, original.agent, stamp)
        if counts_turn:
            data[BUDGET_TURN] = True
        await self.store.set_status(original.event_id, original.agent, "reminded")
        reminder = Decision(
            reminder_id,
            original.agent,
            original.directedness,
            Policy.MUST_RESPOND,
            InjectionMode.BUFFERED,
            "reminder",
            Priority.HIGH,
            self.workspace.settings.deadline_ms,
        )
        return await self._deliver_new(REMINDER_KIND, data, reminder, stamp)

    async def _deliver_new(
        self, kind: str, data: dict[str, Any], decision: Decision, stamp: str
    ) -> list[Emission]:
        """The host's own record `data` (a `kind` under `decision.event_id`) appended, with
        `decision` for it, and delivered; nothing when the ledger holds it already."""
        seq = await self.store.append(decision.event_id, kind, "system", data, stamp)
        if seq is None:
            return []
        await self.store.record_decisions(seq, [decision], stamp)
        return [await self.redeliver(StoredDelivery(decision, seq, "pending", 0, None))]

    async def _escalate_unanswered(self, delivery: StoredDelivery, stamp: str) -> list[Emission]:
        """The reminder `delivery` left unanswered too: escalated (logged once), and the question
        put to the lead (`_tell_lead`); while the lead is down or muted, the reminder stays
        overdue, so a later sweep puts it to the lead once it can take it. Where the lead cannot
        take it (it is the agent that left it, or was not given it: a direct message to
        another agent), the person who asked is told once that no answer came
        (`core.notices.UNANSWERED`), rather than left waiting; nothing where another agent it was
        asked of answered it, or where the agent showed a verdict on it (a reaction)."""
        reminder = delivery.decision
        original = question_of(reminder.event_id)
        event = await self.event(original)
        where = event.conversation.key if event is not None else ""
        lead = self.workspace.lead
        emissions: list[Emission] = []
        if await self.store.record_escalation(lead, "unanswered", where, original, stamp):
            responsible = f"agent:{reminder.agent}"
            emissions.append(Escalation(lead, "unanswered", where, original, responsible))
        if lead != reminder.agent and (lead in self.unavailable or self.muted(lead)):
            return emissions
        await self.store.set_status(reminder.event_id, reminder.agent, "escalated")
        given = {d.decision.agent: d for d in await self.store.deliveries(original)}
        asked = given.get(reminder.agent)
        if asked is None:
            return emissions  # the question is no longer in the ledger
        if any(d.disposition in ANSWERED for d in given.values()):
            return emissions  # another agent it was asked of answered: the person has an answer
        if lead != reminder.agent and lead in given:
            return emissions + await self._tell_lead(original, asked, stamp)
        if await self._verdict_shown(asked.decision, reminder):
            return emissions  # the person saw its ✅, 🙅 or 👍: no "not managed" after that
        key = f"{asked.decision.idempotency_key}:unanswered"
        return emissions + await self._notice(asked.decision, key, notices.UNANSWERED, stamp)

    async def _verdict_shown(self, *decisions: Decision) -> bool:
        """Whether the agent put a verdict (`done`, `declined`, `agree`) on the question or its
        reminder: a reaction answers no `must_respond` question, but the person has seen it."""
        for decision in decisions:
            for signal in _VERDICTS:
                if await self.store.outbox_has(reaction_key(decision.idempotency_key, signal)):
                    return True
        return False

    async def _tell_lead(self, original: str, asked: StoredDelivery, stamp: str) -> list[Emission]:
        """The question `original` that `asked`'s agent left unanswered after its reminder, put
        to the lead to answer: a follow-up event (`<event id>~escalated`, like a reminder: the
        question's content under its own id, `reminds` naming it), `to_me` + `must_respond` +
        `buffered`, reason `escalated`; its answer answers the question (`core.settling`). Only
        where the lead was given the question too (a channel or thread it is in): another
        agent's direct message is not its to read, nor can it answer there."""
        lead = self.workspace.lead
        escalated_id = original + ESCALATION_SUFFIX
        data = await follow_up_data(self.store, asked, escalated_id, lead, stamp)
        decision = Decision(
            escalated_id,
            lead,
            Directedness.TO_ME,
            Policy.MUST_RESPOND,
            InjectionMode.BUFFERED,
            ESCALATED,
            Priority.HIGH,
            self.workspace.settings.deadline_ms,
        )
        return await self._deliver_new(ESCALATION_KIND, data, decision, stamp)

    async def escalate_loop(
        self, event: ChatEvent, escalated: set[str], stamp: str
    ) -> list[Emission]:
        """A bot-to-bot loop that hit the limit in `event`'s conversation is escalated to the
        lead once per run (`escalated`: the conversations already escalated), and the people
        there are told why the agents went quiet, by the agent whose line reached the limit
        (A2ACP 6.4: a loop that reaches its limit goes to the people); none where that line is
        no agent's of this workspace."""
        key = event.conversation.key
        if key in escalated:
            return []
        lead = self.workspace.lead
        if not await self.store.record_escalation(lead, "loop_limit", key, event.event_id, stamp):
            return []
        emissions: list[Emission] = [Escalation(lead, "loop_limit", key, event.event_id)]
        agent = self.workspace.agent_for(event.platform, event.author.id)
        if agent is None:
            return emissions
        stopped = notices.loop_stopped(self.workspace.settings.loop_rounds)
        post = notices.notice(agent, event, f"{event.event_id}:{agent}:loop", stopped, reply=False)
        return emissions + await self._say(post, stamp)
