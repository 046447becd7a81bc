"""What a person is told when they reach an agent's turn budget (`budget` in the manifest).

A message over the budget gets the `queued` reaction and goes to the agent's mailbox
(`core.constraints`, reason `over_budget`): the model sees it only if it looks, until the
budget frees and the follow-up takes up the person's held questions in one turn, each one's
🕐 becoming 👀 (`core.followup`). A person who keeps asking would see clocks and no answer,
and no reason; so the first message over the budget also gets a short notice saying so and when
the agent takes their messages again. It is for that person alone (visibility `ephemeral`:
Slack's ephemeral message, a DM on Discord, on the web chat that person's open pages, as a
`/c2a` answer is) and pings nobody.

Its outbox key names the agent, the person and the moment the budget frees, which stays the
same while the person is over it (nothing new is counted meanwhile): every later message of the
same spell finds the key taken and gets no second notice, and the next spell gets its own.
Pure, like the acknowledgement it goes with.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from core.actions import Post
from core.clock import format_time
from core.decision import Decision
from core.events import ChatEvent, EventKind
from core.manifest_schema import Budget

__all__ = ["budget_notice"]


def budget_notice(
    event: ChatEvent,
    decision: Decision,
    counted: Sequence[datetime],
    budget: Budget,
    now: datetime,
) -> Post | None:
    """The notice for a message decided `over_budget`, or None for any other decision.
    `counted` are the times of the turns the person's budget counts now, oldest first
    (`State.turns`); the budget frees when the oldest of the last `budget.turns` leaves the
    window."""
    if (
        decision.reason != "over_budget"
        or event.kind is not EventKind.MESSAGE
        or len(counted) < budget.turns
    ):
        return None
    frees = counted[len(counted) - budget.turns] + timedelta(seconds=budget.window_s)
    when = f"{frees:%H:%M} UTC" if frees.date() == now.date() else f"{frees:%Y-%m-%d %H:%M} UTC"
    wait = _count(max(1, round((frees - now).total_seconds() / 60)), "minute")
    text = (
        f"I have answered {budget.turns} of your messages in {_span(budget.window_s)}, as many "
        f"as I may for one person, so I can answer you again at {when} (in {wait}). What "
        "you ask me until then is kept, and I will take it up then."
    )
    return Post(
        agent=decision.agent,
        platform=event.platform,
        conversation=event.conversation.id,
        key=f"{decision.agent}:budget:{event.author.id}:{format_time(frees)}",
        text=text,
        thread=event.conversation.thread_id,
        visibility="ephemeral",
        in_reply_to=event.event_id,
        person=event.author.id,
    )


def _span(seconds: int) -> str:
    """A window in words: `an hour`, `2 hours`, `a day`, `10 minutes`."""
    if seconds == 3600:
        return "an hour"
    if seconds == 86400:
        return "a day"
    if seconds % 3600 == 0:
        return _count(seconds // 3600, "hour")
    if seconds % 60 == 0:
        return _count(seconds // 60, "minute")
    return _count(seconds, "second")


def _count(n: int, unit: str) -> str:
    return f"1 {unit}" if n == 1 else f"{n} {unit}s"
