"""The limits that override the attention rules (mutes, leaving, loops, access, deadlines and
turn budgets), and the choice of the one agent a role mention, group DM or broadcast goes to.
Pure functions of the decision, the event and the `Context`, like the rules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from core.attention import Assessment
from core.attention_context import Context
from core.decision import Decision, Directedness, InjectionMode, Policy
from core.events import AuthorKind, ChatEvent, EventKind
from core.manifest import Workspace
from core.state import State

__all__ = ["budget_spent", "constrain", "over_budget", "select_responder"]

TO_ME, TO_MY_ROLE = Directedness.TO_ME, Directedness.TO_MY_ROLE
MUST, MAY, MUST_NOT = Policy.MUST_RESPOND, Policy.MAY_RESPOND, Policy.MUST_NOT_RESPOND
BUFFERED, IMMEDIATE = InjectionMode.BUFFERED, InjectionMode.IMMEDIATE
MAILBOX, SILENT = InjectionMode.TOOL_MAILBOX, InjectionMode.SILENT

# Reasons that survive having left a conversation: only being named or DMed brings an agent back.
_RECALLED = frozenset({"direct_message", "direct_mention"})


def constrain(assessment: Assessment, event: ChatEvent, agent: str, ctx: Context) -> Assessment:
    """Apply the limits that override the rules: mutes, leaving, loops, access, deadlines and
    turn budgets. Only messages and edits are constrained."""
    decision = assessment.decision
    if event.kind not in (EventKind.MESSAGE, EventKind.EDIT) or decision.reason == "own_message":
        return assessment
    ws, state = ctx.workspace, ctx.state
    conversation = event.conversation
    channel = ctx.channel.agents.get(agent) if ctx.channel.agents else None
    if channel is not None and channel.mute and decision.directedness is not TO_ME:
        return Assessment(_quiet(decision, SILENT, "muted"))
    active = decision.policy is not MUST_NOT
    if state.is_muted(agent, ctx.now):  # `/c2a mute`: no new turns, whoever it is for
        return Assessment(_quiet(decision, MAILBOX if active else decision.mode, "muted"))
    if not active:
        # Nothing below loosens a decision, and a must_not_respond cannot get stricter.
        return assessment
    if decision.reason not in _RECALLED and (
        (agent, conversation.key) in state.left or (agent, conversation.scope) in state.left
    ):
        return Assessment(_quiet(decision, MAILBOX, "left_conversation"))
    bot_like = event.author.kind in (AuthorKind.AGENT, AuthorKind.BOT)
    if bot_like and state.streaks.get(conversation.key, 0) >= ws.settings.loop_rounds:
        return Assessment(_quiet(decision, MAILBOX, "loop_limit"))
    if event.author.kind is AuthorKind.HUMAN and decision.directedness in (TO_ME, TO_MY_ROLE):
        refusal = _refused(event, agent, decision, ws)
        if refusal is not None:
            return Assessment(_quiet(decision, MAILBOX, refusal))
    if decision.policy is MUST:
        age = ctx.now - event.created_at
        if age > timedelta(milliseconds=ws.settings.deadline_ms):
            decision = replace(decision, policy=MAY, reason="expired")
        else:
            decision = replace(decision, deadline_ms=ws.settings.deadline_ms)
    if (
        decision.mode in (BUFFERED, IMMEDIATE)
        and decision.policy in (MUST, MAY)
        and over_budget(event, decision, ctx)
    ):
        decision = replace(decision, mode=MAILBOX, reason="over_budget")
    return Assessment(decision, assessment.candidate)


def over_budget(event: ChatEvent, decision: Decision, ctx: Context) -> bool:
    """Whether a turn for `decision` would take its agent past the turn budget of `event`'s
    author (`budget` in the manifest): a person's message that continues no other, when they
    have caused the agent as many full turns as the budget allows in the window ending now."""
    if event.author.kind is not AuthorKind.HUMAN or decision.continues is not None:
        return False
    return budget_spent(ctx.state, ctx.workspace, decision.agent, event.author.id, ctx.now)


def budget_spent(state: State, ws: Workspace, agent: str, person: str, now: datetime) -> bool:
    """Whether `person` has caused `agent` as many full turns as their budget allows in the
    window ending `now`."""
    budget = ws.budget(agent)
    window = timedelta(seconds=budget.window_s)
    return state.open_turns(agent, person, now, window) >= budget.turns


def _quiet(decision: Decision, mode: InjectionMode, reason: str) -> Decision:
    return replace(decision, policy=MUST_NOT, mode=mode, reason=reason, deadline_ms=None)


def _refused(event: ChatEvent, agent: str, decision: Decision, ws: Workspace) -> str | None:
    access = ws.access(agent)
    if event.author.external and not access.external:
        return "external_author"
    allowed = access.dm if decision.reason == "direct_message" else access.mention
    if allowed != "*" and event.author.id not in allowed:
        return "not_allowed"
    return None


def select_responder(
    candidates: Sequence[str], busy: Mapping[str, int], selection: str, order: Sequence[str]
) -> str:
    """The one agent a role mention, group DM or broadcast goes to.

    `least_busy`: fewest open obligations (`Decision.owes_answer`), ties broken by manifest order;
    `order`: the first candidate in manifest order. Deterministic for the same inputs.
    """
    ordered = [a for a in order if a in candidates] or list(candidates)
    if selection == "least_busy":
        return min(ordered, key=lambda a: (busy.get(a, 0), ordered.index(a)))
    return ordered[0]
