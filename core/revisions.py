"""Decisions revised after the fact: an edit's decision against what the agent had of the
earlier version, and a late question another person already answered in the gap."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Final

from core.attention_context import Context
from core.decision import Decision, Directedness, Policy
from core.events import AuthorKind, ChatEvent, ConversationKind, EventKind

__all__ = ["LATE_AFTER", "answered_in_gap", "is_late", "revise_for_edit"]

LATE_AFTER: Final = timedelta(minutes=1)
"""An event the host received more than this after it was sent is late (`is_late`)."""

TO_ME = Directedness.TO_ME
MUST, MAY = Policy.MUST_RESPOND, Policy.MAY_RESPOND
_MESSAGE = EventKind.MESSAGE
_CHANNEL = ConversationKind.CHANNEL
_HUMAN = AuthorKind.HUMAN


def revise_for_edit(
    decision: Decision, prior: Decision | None, answered: bool, supersedes: str | None
) -> Decision:
    """An edit's decision: `edited_after_response` once the agent answered the earlier version
    (then `may_respond` at most, unless the edit newly addresses the agent), else
    `edited_before_injection` with the edited text decided afresh. An edit held over its
    author's turn budget keeps `over_budget`, the reason the follow-up takes it up by once the
    budget frees (`core.followup`), not at the answer deadline as any other question."""
    if decision.reason == "own_message":
        return replace(decision, supersedes=supersedes)
    policy, reason = decision.policy, "edited_before_injection"
    if answered:
        newly_addressed = decision.directedness is TO_ME and (
            prior is None or prior.directedness is not TO_ME
        )
        if policy is MUST and not newly_addressed:
            policy = MAY
        reason = "edited_after_response"
    if decision.reason == "over_budget":
        reason = decision.reason
    return replace(decision, policy=policy, reason=reason, supersedes=supersedes)


def is_late(event: ChatEvent, received: datetime) -> bool:
    """Whether the host received `event` more than `LATE_AFTER` after it was sent: read from
    history after an outage, replayed by a resumed gateway, or sent again by the platform."""
    return received - event.created_at > LATE_AFTER


def answered_in_gap(
    decision: Decision,
    question: ChatEvent,
    received: datetime,
    reply: ChatEvent,
    ctx: Context,
) -> Decision | None:
    """A question already answered in the gap is not answered again: the `must_respond`
    `decision` on a late `question` (received at `received`), not yet delivered, once `reply`,
    late too, is another person's answer to it, becomes `may_respond` for `answered_in_gap`;
    None when the rule does not apply. Live events are never revised here.

    An answer is a message from a person (not an agent, not a bot, not the asker), sent after
    the question, that is a reply to it: a reply in its thread (a thread reply to the question
    or after it in the same thread, any later message in a thread that is a channel), a
    reply reference to it, or, in a channel without threads, a message that mentions the
    asker.
    """
    if (
        decision.policy is not MUST
        or question.kind is not _MESSAGE
        or reply.kind is not _MESSAGE
        or not is_late(question, received)
        or not is_late(reply, ctx.now)
        or reply.author.kind is not _HUMAN
        or ctx.author_agent is not None
        or reply.author.id == question.author.id
        or reply.created_at <= question.created_at
        or not _replies_to(reply, question)
    ):
        return None
    return replace(decision, policy=MAY, reason="answered_in_gap", deadline_ms=None)


def _replies_to(reply: ChatEvent, question: ChatEvent) -> bool:
    """Whether `reply` answers `question` by where it was said (see `answered_in_gap`). Its
    first two tests are `core.state_records.LateQuestion.within_reach`, which spares a late
    reply the reads of questions it cannot answer: they change together."""
    if question.message_id is not None and reply.reply_to == question.message_id:
        return True
    asked, said = question.conversation, reply.conversation
    if said.id != asked.id:
        return False
    if said.kind is ConversationKind.THREAD:
        # In the question's thread, or in the thread the question started (a thread root).
        return said.key == asked.key or (
            asked.thread_id is None and said.thread_id == question.message_id
        )
    return (
        asked.kind is _CHANNEL
        and said.kind is _CHANNEL
        and asked.thread_id is None
        and question.author.id in reply.mentions.users
    )
