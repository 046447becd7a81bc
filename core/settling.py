"""What an agent's answer settles besides the delivery it answers, so a question is answered once.

A question stands under several ids once the host follows it up (`core.follow_up_records`): its
own, its reminder, its hand-overs and their reminders, its escalation to the lead and that
one's reminder. `settle` records how an agent ended one of them (an answer, a deferral, a
hand-over) and, across all of them:

- ends the same way every one the agent itself still owes: answering the question after its
  reminder came answers the reminder too, which would otherwise be escalated as unanswered;
- where it is an answer (`ANSWERED`), ends the lead's escalation of it (`superseded`, "answered
  by agent:<id>"): the lead is no longer asked to answer what is answered;
- where it is the lead answering its escalation, ends every other agent's obligation on it
  likewise: the answer of the agent it was escalated for, coming late, is refused
  (`core.guards.check_reply`), so the person gets one answer, not two.

One of several agents named in a message answering it answers for itself only: the others'
obligations stay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.decision import Decision, Disposition
from core.emission import Cancel
from core.follow_up_records import ESCALATION_SUFFIX, follow_up_ids, follows_up, question_of
from core.guards import ANSWERED, UNANSWERED

if TYPE_CHECKING:
    from core.engine import Engine

__all__ = ["settle"]


async def settle(
    engine: Engine, agent: str, ended: Decision, disposition: Disposition, why: str
) -> list[Cancel]:
    """Record that `agent` ended `ended` (its decision about one id of a question) with
    `disposition`, and what that settles (see the module doc), in the caller's transaction.
    Returns a cancellation (`claimed_by_other`) of each other delivery it ended, for its
    agent's harness, to send once the transaction commits."""
    stands_for = follows_up(ended)
    question = ended.event_id if stands_for is None else question_of(stands_for)
    escalation = question + ESCALATION_SUFFIX
    answered = disposition in ANSWERED
    by_lead = answered and ended.event_id.startswith(escalation)
    await engine.dispose(agent, ended.event_id, disposition, why)
    settled: list[Cancel] = []
    for event_id in (question, *follow_up_ids(question)):
        if event_id == ended.event_id:
            continue
        for delivery in await engine.store.deliveries(event_id):
            other = delivery.decision.agent
            owes = delivery.disposition in UNANSWERED and delivery.decision.owes_answer
            if other == agent and (owes or event_id == stands_for):
                await engine.dispose(agent, event_id, disposition, why)
                settled.append(Cancel(agent, event_id, "claimed_by_other"))
            elif owes and (by_lead or (answered and event_id.startswith(escalation))):
                answer = f"answered by agent:{agent}"
                await engine.dispose(other, event_id, Disposition.SUPERSEDED, answer)
                settled.append(Cancel(other, event_id, "claimed_by_other"))
    return settled
