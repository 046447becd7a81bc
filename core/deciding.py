"""Deciding one event for its audience: the rules for each agent, one claim among the agents
free to answer, plain channel chatter decided once per shape, and a late reply revising the
late questions it answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Final

from core.agent_records import revised as revised_record
from core.attention import ChatterShape, assess, chatter_shape
from core.attention_context import Context
from core.clock import format_time, parse_time
from core.codec import event_from_data
from core.constraints import constrain, over_budget, select_responder
from core.decision import Decision, Directedness, InjectionMode, Policy, Priority
from core.events import ChatEvent, EventKind
from core.manifest import Workspace
from core.revisions import answered_in_gap, is_late
from core.state import State
from core.state_records import LateQuestion
from core.store import Store

__all__ = ["LATE_HELD", "Decider"]

LATE_HELD: Final = 4096
"""Late questions remembered for a late reply to answer (`Decider.answered_in_gap`): those of a
catch-up after an outage. Past that the oldest is forgotten, and simply delivered."""

_MESSAGE = EventKind.MESSAGE
_MUST = Policy.MUST_RESPOND
_BUFFERED, _MAILBOX = InjectionMode.BUFFERED, InjectionMode.TOOL_MAILBOX
_Answer = tuple[Directedness, Policy, InjectionMode, str, Priority]


class Decider:
    """Decides the events of one workspace; claims are taken in the store. `unavailable` is
    the engine's own map of agents known to be down (`Engine.unavailable`)."""

    def __init__(
        self, workspace: Workspace, store: Store, unavailable: Mapping[str, datetime]
    ) -> None:
        self.workspace = workspace
        self.store = store
        self.unavailable = unavailable
        # The rules' answer to plain channel chatter, per shape and agent (`_chatter`).
        self._chatter_answers: dict[ChatterShape, dict[str, _Answer]] = {}

    async def decide(
        self, event: ChatEvent, audience: list[str], ctx: Context, state: State
    ) -> list[Decision]:
        """One decision per agent of `audience`, in its order."""
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
            holder = await self._holder(event, [decisions[a] for a in candidates], ctx, state)
            for agent in candidates:
                decision = decisions[agent]
                if agent != holder:
                    decisions[agent] = replace(
                        decision,
                        policy=Policy.MUST_NOT_RESPOND,
                        reason="claimed_by_other",
                        claimed_by=holder,
                    )
                elif over_budget(event, decision, ctx):  # as every candidate was: held
                    # as a mention is, owed, so the follow-up takes it up once the budget frees
                    decisions[agent] = replace(
                        decision,
                        policy=Policy.MUST_RESPOND,
                        mode=_MAILBOX,
                        reason="over_budget",
                        claimed_by=agent,
                        deadline_ms=self.workspace.settings.deadline_ms,
                    )
                else:
                    decisions[agent] = replace(decision, mode=_BUFFERED, claimed_by=agent)
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
        muted = ctx.state.is_muted(agent, ctx.now)  # a mute passes: never kept as the answer
        answer = None if muted else answers.get(agent)
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
        if not muted and decision == Decision(event.event_id, agent, *answer):
            answers[agent] = answer
        return decision

    async def _holder(
        self, event: ChatEvent, candidates: list[Decision], ctx: Context, state: State
    ) -> str:
        """The agent holding the event's claim, selecting and claiming one if nobody does:
        among the candidates whose harness is up, when any is, and of those among the ones
        the asker has not taken to their turn budget, when any is."""
        held = state.claim_holder(event.event_id, ctx.now)
        if held is not None:
            return held
        settings = self.workspace.settings
        up = [d for d in candidates if d.agent not in self.unavailable] or candidates
        able = [d.agent for d in up if not over_budget(event, d, ctx)] or [d.agent for d in up]
        chosen = select_responder(able, state.busy, settings.selection, self.workspace.agent_ids)
        result = await self.store.claim(event.event_id, chosen, ctx.now, settings.claim_ttl_ms)
        state.note_claim(event.event_id, result.holder, result.expires_at)
        return result.holder

    def note_question(
        self,
        event: ChatEvent,
        seq: int,
        decisions: list[Decision],
        received: datetime,
        state: State,
    ) -> None:
        """Remember a question received late with the agents it is `must_respond` for: only
        those can a later reply answer in the gap (`answered_in_gap`), so a late reply looks at
        them, not at every delivery still pending."""
        if event.kind is not _MESSAGE or not is_late(event, received):
            return
        agents = {d.agent for d in decisions if d.policy is _MUST}
        if agents:
            where = LateQuestion(event.conversation.id, event.message_id)
            state.late_questions.setdefault(seq, where).agents.update(agents)
            if len(state.late_questions) > LATE_HELD:  # the oldest is simply delivered
                del state.late_questions[next(iter(state.late_questions))]

    async def answered_in_gap(
        self, reply: ChatEvent, ctx: Context, first: bool, state: State
    ) -> None:
        """A late reply, new to the ledger, answers late questions still waiting for their
        agents: each such `must_respond` becomes `may_respond`
        (`core.revisions.answered_in_gap`). A question leaves `state.late_questions` once none
        of its agents is still waiting."""
        if not first or reply.kind is not _MESSAGE or not is_late(reply, ctx.now):
            return
        store = self.store
        for seq, late in list(state.late_questions.items()):
            if not late.within_reach(reply):  # nothing to read: a catch-up floods many places
                continue
            agents = late.agents
            entry = await store.entry(seq)
            if entry is None:
                del state.late_questions[seq]
                continue
            question, received = event_from_data(entry.data), parse_time(entry.ts)
            for delivery in await store.deliveries(question.event_id):
                decision = delivery.decision
                if decision.agent not in agents:
                    continue
                if delivery.status != "pending" or decision.policy is not _MUST:
                    agents.discard(decision.agent)  # delivered, or no longer a must
                    continue
                revised = answered_in_gap(decision, question, received, reply, ctx)
                if revised is not None and await store.revise_pending(seq, revised):
                    state.note_revised(question, revised)
                    agents.discard(decision.agent)
                    if store.shared:  # for the other processes' memories (`catch_up`)
                        stamp = format_time(ctx.now)
                        await store.append(*revised_record(question.event_id, revised.agent, stamp))
            if not agents:
                del state.late_questions[seq]
