"""The host's records that stand for an earlier event under an id of their own: a reminder
(`<event id>~reminder`), a hand-over to another agent (`<event id>~handover`, `~handover~2`...:
`core.handover`) and an escalation to the lead (`<event id>~escalated`). Their kinds, ids and
reasons, the record each is (`follow_up_data`: the original's addressing, never its text), and
how to find the event one stands for (`follows_up`). `core.followup` makes reminders and
escalations; pure but for reading the original's record.
"""

from __future__ import annotations

from typing import Any

from core.decision import Decision
from core.store import Ledger, StoredDelivery

__all__ = [
    "BUDGET_TURN",
    "ESCALATED",
    "ESCALATION_KIND",
    "ESCALATION_SUFFIX",
    "FOLLOW_UP_KINDS",
    "HANDED_OVER",
    "HANDOVER_KIND",
    "HANDOVER_SUFFIX",
    "MAX_HANDOVERS",
    "REMINDER_KIND",
    "REMINDER_SUFFIX",
    "follow_up_data",
    "follow_up_ids",
    "follows_up",
    "handover_id",
    "question_of",
]

REMINDER_KIND = "x.c2a.reminder"
BUDGET_TURN = "budget_turn"  # on a reminder's record: it counts a turn of its asker's budget
REMINDER_SUFFIX = "~reminder"  # a reminder's event id is its original's, plus this
HANDOVER_KIND = "x.c2a.handover"  # a question handed to another agent (`core.handover`)
HANDOVER_SUFFIX = "~handover"  # a hand-over's id: the question's, this, and `~n` after the first
MAX_HANDOVERS = 4  # the most times one question is handed over (`core.handover`)
HANDED_OVER = "handed_over"  # a hand-over's reason
ESCALATION_KIND = "x.c2a.escalation"  # a question nobody answered, told to the lead
ESCALATION_SUFFIX = "~escalated"  # an escalation's id: the question's, and this
ESCALATED = "escalated"  # an escalation's reason
FOLLOW_UP_KINDS = frozenset({REMINDER_KIND, HANDOVER_KIND, ESCALATION_KIND})
"""The host's records that stand for an earlier event, under their own id (`reminds`)."""
_FOLLOW_UPS = {
    "reminder": REMINDER_SUFFIX,
    HANDED_OVER: HANDOVER_SUFFIX,
    ESCALATED: ESCALATION_SUFFIX,
}


async def follow_up_data(
    store: Ledger, original: StoredDelivery, event_id: str, agent: str, stamp: str
) -> dict[str, Any]:
    """The ledger record of a follow-up (`event_id`, for `agent`) of `original`'s event. It
    reads back as an event like any other (tools, dispositions and failures look it up): the
    original's platform, place, author and message, but never its text, which a delete must be
    able to erase from the ledger for good."""
    data: dict[str, Any] = {
        "event_id": event_id,
        "reminds": original.decision.event_id,
        "agent": agent,
    }
    entry = await store.entry(original.seq)
    if entry is None:
        return data
    kept = ("kind", "platform", "workspace_id", "conversation", "author", "message_id")
    addressing = {name: entry.data[name] for name in kept if name in entry.data}
    return {**addressing, **data, "created_at": stamp}


def handover_id(event_id: str, n: int) -> str:
    """The id of the `n`-th hand-over (from 1) of the question `event_id`."""
    return f"{event_id}{HANDOVER_SUFFIX}" + ("" if n == 1 else f"~{n}")


def follows_up(decision: Decision) -> str | None:
    """The event id a reminder's or a hand-over's decision stands for, else None."""
    suffix = _FOLLOW_UPS.get(decision.reason)
    if suffix is None:
        return None
    if suffix == HANDOVER_SUFFIX:
        original, found, _ = decision.event_id.partition(suffix)
        return original if found else None
    return decision.event_id.removesuffix(suffix) if decision.event_id.endswith(suffix) else None


def follow_up_ids(event_id: str) -> tuple[str, ...]:
    """The ids the host's follow-ups of `event_id` would have (`follows_up` reads them): its
    reminder, each hand-over and the escalation to the lead, each of those with its own
    reminder."""
    handed = (handover_id(event_id, n) for n in range(1, MAX_HANDOVERS + 1))
    standing = (*handed, event_id + ESCALATION_SUFFIX)
    return (event_id + REMINDER_SUFFIX, *(i for s in standing for i in (s, s + REMINDER_SUFFIX)))


def question_of(follow_up: str) -> str:
    """The question the follow-up id `follow_up` (one `follows_up` gave) stands for, through a
    reminder of a hand-over or of an escalation: `<id>~handover~2~reminder` is `<id>`'s."""
    question = follow_up.removesuffix(REMINDER_SUFFIX).removesuffix(ESCALATION_SUFFIX)
    return question.partition(HANDOVER_SUFFIX)[0]
