"""The agent port on the host's engine: every chat operation of one agent, guarded, on the ledger.

`EnginePort(engine, agent)` reads the host's ledger (never a harness's mailbox) and shows only
what was delivered to its agent. What it sends it builds as typed `core.actions` values and
queues with `Engine.queue_action`, under an idempotency key, so a retried call never makes a
second visible message; the platform adapters send what the outbox holds. The rules are
`core.guards`, and `core.post_places` for where a post may go; a refused call raises
`ToolError` and queues nothing. Only a visible answer closes a question: a reaction to a
`must_respond` event records no disposition, and an answer settles the question under every
id it stands under (its reminder, hand-over, escalation: `core.settling`), so it is answered
once. The send budget belongs to the port, so every face of one agent's tools (function tools,
the final text of a turn) spends the same one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping, Sequence

from core.actions import Action, Delete, Edit, Post, React, reaction_key
from core.agent_port import (
    EventFilter,
    EventView,
    MessageState,
    Outgoing,
    Queued,
    ToolCall,
    TurnEvent,
)
from core.approvals import Verdict
from core.asking import Approval, ask
from core.call_audit import audit_detail
from core.clock import Clock, format_time
from core.decision import Disposition, Policy
from core.emission import Cancel, Emission
from core.engine import Engine
from core.errors import ToolError
from core.event_views import events_seen, thread_seen
from core.file_reading import FileContent, read_attachment
from core.guards import (
    ANSWERED,
    SendBudget,
    check_audience,
    check_claim,
    check_reaction,
    check_reply,
    check_text,
    derived_key,
    is_owed,
    mentions,
    own_key,
    reaction_disposition,
)
from core.indicator import progress_actions, working_actions
from core.post_files import contents
from core.post_places import check_met, check_thread, post_place
from core.sent_messages import landed_message, message_id, sent_by
from core.settling import settle
from core.signals import Signal
from core.store import ClaimResult, StoredDelivery

__all__ = ["EnginePort", "Tell"]

# Where a call's cancellations of what it took from other agents go (the run's dispatch).
Tell = Callable[[list[Emission]], Awaitable[None]]


class EnginePort:
    """One agent's `AgentPort` on the host's engine; `fetchers`: the senders, by platform;
    `limits`: the characters one message holds, by platform, for the rule that sends a long
    answer as a file (`core.post_files.contents`); `tell`: where the other agents' harnesses
    are told what a call took from them (None: nowhere, their answers are refused all the
    same)."""

    def __init__(
        self,
        engine: Engine,
        agent: str,
        fetchers: Mapping[str, object] = {},
        limits: Mapping[str, int] = {},
        tell: Tell | None = None,
    ) -> None:
        self._engine = engine
        self._agent = agent
        self._fetchers = fetchers
        self._limits = limits
        self._tell = tell
        self._budget = SendBudget(engine.workspace.settings.sends_per_minute)

    @property
    def agent(self) -> str:
        return self._agent

    @property
    def clock(self) -> Clock:
        return self._engine.clock

    @property
    def answer_parts(self) -> int:
        return self._engine.workspace.settings.answer_file_parts

    # ---- reading -----------------------------------------------------------------------------

    async def list_events(self, which: EventFilter) -> list[EventView]:
        return await events_seen(self._engine.store, self._agent, which)

    async def read_thread(
        self, conversation: str, *, thread: str | None = None, limit: int = 50
    ) -> list[EventView]:
        return await thread_seen(self._engine.store, self._agent, conversation, thread, limit)

    async def read_file(self, event_id: str, file_id: str) -> FileContent:
        await self._delivery(event_id)  # only files on what the agent was shown
        event = await self._engine.event(event_id)
        assert event is not None  # a delivered event is in the ledger
        settings = self._engine.workspace.settings
        return await read_attachment(self._agent, event, file_id, self._fetchers, settings)

    # ---- acting ------------------------------------------------------------------------------

    async def send(self, message: Outgoing) -> Queued:
        engine = self._engine
        check_text(message.text)
        delivery = await self._delivery(message.in_reply_to) if message.in_reply_to else None
        where = message.in_reply_to or f"{message.conversation}/{message.thread or ''}"
        key = (
            own_key(self._agent, message.key)
            if message.key
            else derived_key(self._agent, message.text, where)
        )
        repeat = await engine.store.outbox_has(key)  # a retry of a queued call is always fine
        place = await post_place(engine, self._agent, message.conversation, message.in_reply_to)
        await check_thread(
            engine, self._agent, place.platform, message.conversation, message.thread
        )
        named = mentions(message.directedness, message.recipients, engine.workspace.manifest)
        person = check_audience(message, place.in_dm, place.asker)
        await check_met(engine, self._agent, message.conversation, person, place.asker)
        if delivery is not None and not repeat:
            check_reply(delivery, self._holder(delivery), self._agent, message.text)
        ephemeral, limit = message.visibility == "ephemeral", self._limits.get(place.platform)
        text, files = contents(message.text, message.files, ephemeral, limit, self.answer_parts)
        if not repeat:  # last: a message refused for any reason counts against nothing
            self._budget.spend(message.conversation, engine.clock.now())
        post = Post(
            agent=self._agent,
            platform=place.platform,
            conversation=message.conversation,
            key=key,
            text=text,
            files=files,
            thread=message.thread,
            visibility=message.visibility,
            directedness=message.directedness.value,
            mentions=named,
            in_reply_to=message.in_reply_to,
            writing=message.writing,
            person=person,
        )
        why = f"answered with message {key}"
        settled: list[Cancel] = []
        async with engine.transaction():
            queued = await engine.queue_action(post, self._now())
            # A repeat answers a question given back as failed: its answer was cut short, and
            # the new one, begun alike, is drawn over the same message (`core.restart`).
            again = delivery is not None and delivery.disposition is Disposition.FAILED
            if (queued or again) and delivery is not None:
                ack_only = delivery.decision.policy is Policy.ACK_ONLY
                disposition = Disposition.ACKNOWLEDGED if ack_only else Disposition.RESPONDED
                settled += await settle(engine, self._agent, delivery.decision, disposition, why)
            for event_id in message.also_answers if queued else ():
                also = await self._mine(event_id)
                if also is not None:
                    answered = Disposition.RESPONDED
                    settled += await settle(engine, self._agent, also.decision, answered, why)
        await self._took(settled)
        return Queued(key, queued)

    async def react(self, in_reply_to: str, signal: Signal, *, eta: str | None = None) -> Queued:
        engine = self._engine
        delivery = await self._delivery(in_reply_to)
        check_reaction(delivery, self._holder(delivery), self._agent, signal)
        key = reaction_key(delivery.decision.idempotency_key, signal)
        event = await engine.event(in_reply_to)
        if event is None or event.message_id is None:
            raise ToolError(f"{in_reply_to!r} is not a message you can react to")
        action = React(
            agent=self._agent,
            platform=event.platform,
            conversation=event.conversation.id,
            key=key,
            message_id=event.message_id,
            signal=signal,
            event_id=in_reply_to,
            eta=eta,
        )
        async with engine.transaction():
            queued = await engine.queue_action(action, self._now())
            disposition = reaction_disposition(delivery.decision.policy, signal)
            if queued and disposition is not None:
                await self._dispose(delivery, disposition, f"signal {signal.value}")
        return Queued(key, queued)

    async def claim(self, event_id: str) -> ClaimResult:
        deliveries = await self._engine.store.deliveries(event_id)
        delivery = _delivered(event_id, self._own(deliveries))
        check_claim(delivery, deliveries)
        async with self._engine.transaction():
            result, others = await self._engine.claim(self._agent, event_id)
            if result.granted:
                await self._dispose(delivery, Disposition.CLAIMED, "claimed")
        await self._took(others)
        return result

    async def defer(self, event_id: str, reason: str, *, eta: str | None = None) -> Disposition:
        return await self._settle(event_id, Disposition.DEFERRED, reason)

    async def resolve(self, event_id: str, note: str | None = None) -> Disposition:
        return await self._settle(event_id, Disposition.RESPONDED, note or "resolved")

    async def leave(self, conversation: str, thread: str | None = None) -> str:
        await post_place(self._engine, self._agent, conversation, None)  # else nothing to leave
        place = f"{conversation}/{thread}" if thread else conversation
        async with self._engine.transaction():
            await self._engine.leave(self._agent, place)
        return place

    async def edit(self, key: str, text: str, *, draft: int | None = None) -> Queued:
        key, original, landed = await landed_message(self._engine.store, self._agent, key)
        if draft is None:
            check_text(text)
            digest = hashlib.sha256(text.encode()).hexdigest()[:16]
            change_key = f"{key}:edit:{digest}"
        else:
            change_key = f"{key}:draft:{draft}"
        edit = Edit(
            **landed,
            key=change_key,
            text=text,
            mentions=original.mentions,
            draft=draft is not None,
        )
        return await self._queue(edit)

    async def delete(self, key: str) -> Queued:
        key, original, landed = await landed_message(self._engine.store, self._agent, key)
        delete = Delete(**landed, key=f"{key}:delete")
        answered = await self._mine(original.in_reply_to) if original.in_reply_to else None
        async with self._engine.transaction():
            queued = await self._engine.queue_action(delete, self._now())
            if queued and answered is not None and answered.disposition in ANSWERED:
                # Its answer withdrawn, the question is neither answered nor owed: the agent
                # may answer it again, and no reminder chases it.
                await self._dispose(answered, Disposition.IGNORED, f"withdrew its answer {key}")
        return Queued(delete.key, queued)

    async def message(self, key: str) -> MessageState | None:
        entry = await sent_by(self._engine.store, self._agent, key)
        if entry is None:
            return None
        thread = (entry.result or {}).get("thread")
        return MessageState(entry.status, message_id(entry), str(thread) if thread else None)

    # ---- around a turn -----------------------------------------------------------------------

    async def owed(self, event_ids: Sequence[str]) -> list[str]:
        owed: list[str] = []
        for event_id in event_ids:
            delivery = await self._mine(event_id)
            if delivery is not None and is_owed(delivery, self._holder(delivery), self._agent):
                owed.append(event_id)
        return owed

    async def final_reply(self, event_ids: Sequence[str], text: str) -> Outgoing | None:
        owed = await self.owed(event_ids)
        said = text.strip()
        if not owed or not said:
            return None
        event = await self._engine.event(owed[-1])
        if event is None:
            return None
        place = event.conversation
        also: list[str] = []
        for other_id in owed[:-1]:
            other = await self._engine.event(other_id)
            if other is not None and other.conversation.key == place.key:
                also.append(other_id)
        return Outgoing(
            conversation=place.id,
            thread=place.thread_id,
            text=said,
            in_reply_to=owed[-1],
            also_answers=tuple(also),
        )

    async def unsettled(self, event_ids: Sequence[str]) -> list[str]:
        return [e for e, ended in (await self._ended(event_ids)).items() if ended is None]

    async def superseded(self, event_ids: Sequence[str]) -> list[str]:
        ended = await self._ended(event_ids)
        return [e for e, how in ended.items() if how is Disposition.SUPERSEDED]

    async def fail(self, event_ids: Sequence[str], reason: str) -> list[str]:
        recorded: list[str] = []
        async with self._engine.transaction():
            for event_id in event_ids:
                delivery = await self._mine(event_id)
                if delivery is not None and delivery.disposition is None:
                    await self._dispose(delivery, Disposition.FAILED, reason)
                    recorded.append(event_id)
        return recorded

    async def working(self, events: Sequence[TurnEvent], on: bool) -> None:
        await self._queue_all(working_actions(self._agent, events, on))

    async def progress(self, events: Sequence[TurnEvent], note: str, step: str) -> None:
        await self._queue_all(progress_actions(self._agent, events, note, step))

    async def ask(self, approval: Approval) -> Verdict:
        return await ask(self._engine, self._agent, approval)

    async def record_call(self, call: ToolCall) -> None:
        """Redacted (`core.call_audit`)."""
        detail = audit_detail(call, self._engine.redactor)
        async with self._engine.transaction():
            await self._engine.store.audit(
                self._agent, call.tool, call.outcome, detail, self._now()
            )

    def mark_available(self) -> None:
        self._engine.mark_available(self._agent)

    def mark_unavailable(self) -> None:
        self._engine.mark_unavailable(self._agent)

    # ---- inside ------------------------------------------------------------------------------

    async def _settle(self, event_id: str, disposition: Disposition, why: str) -> Disposition:
        delivery = await self._delivery(event_id)
        async with self._engine.transaction():
            settled = await settle(self._engine, self._agent, delivery.decision, disposition, why)
        await self._took(settled)
        return disposition

    async def _took(self, cancels: Sequence[Emission]) -> None:
        """Tell the other agents' harnesses to drop what this agent's claim or answer took from
        them (`Engine.claim`, `core.settling`): a turn left with nothing to answer stops."""
        taken = [cancel for cancel in cancels if cancel.agent != self._agent]
        if taken and self._tell is not None:
            await self._tell(taken)

    async def _queue(self, action: Edit | Delete) -> Queued:
        async with self._engine.transaction():
            queued = await self._engine.queue_action(action, self._now())
        return Queued(action.key, queued)

    async def _queue_all(self, actions: Sequence[Action]) -> None:
        stamp = self._now()
        async with self._engine.transaction():
            for action in actions:
                await self._engine.queue_action(action, stamp)

    async def _delivery(self, event_id: str) -> StoredDelivery:
        return _delivered(event_id, await self._mine(event_id))

    async def _ended(self, event_ids: Sequence[str]) -> dict[str, Disposition | None]:
        """How each event ended for this agent (None: not yet, or never given it)."""
        mine = {event_id: await self._mine(event_id) for event_id in event_ids}
        return {e: d.disposition if d else None for e, d in mine.items()}

    async def _mine(self, event_id: str) -> StoredDelivery | None:
        return self._own(await self._engine.store.deliveries(event_id))

    def _own(self, deliveries: Sequence[StoredDelivery]) -> StoredDelivery | None:
        """The agent's delivery among an event's `deliveries`, if it has one."""
        for delivery in deliveries:
            if delivery.decision.agent == self._agent:
                return delivery
        return None

    def _holder(self, delivery: StoredDelivery) -> str | None:
        """Who holds the claim on the delivery's event now, if anyone."""
        return self._engine.state.claim_holder(delivery.decision.event_id, self._engine.clock.now())

    async def _dispose(self, delivery: StoredDelivery, disposition: Disposition, why: str) -> None:
        await self._engine.dispose(self._agent, delivery.decision.event_id, disposition, why)

    def _now(self) -> str:
        return format_time(self._engine.clock.now())


def _delivered(event_id: str, delivery: StoredDelivery | None) -> StoredDelivery:
    """`delivery`, the agent's own of `event_id`; ToolError when it was never delivered one."""
    if delivery is None:
        raise ToolError(f"no event {event_id!r} was delivered to you")
    return delivery
