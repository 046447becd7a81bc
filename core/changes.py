"""What a change to a message, or the hint that one is coming, means for the agents: an edit
revises the decisions and supersedes what each agent was told, a delete cancels every
delivery of the message, and typing is forwarded as a passing hint. What an edit or a delete
replaces and no agent has answered yet is settled `superseded` (spec 000): nothing is owed on
words that are gone, so no reply is posted to them and no reminder chases them.

A message the engine no longer holds (`core.state_messages`) is changed as one it never saw,
but for what the ledger keeps: its delete still blanks the stored versions, and an edit of it
once deleted is still dropped. An edit that comes after its message's delete (a retry, a client
that edits what it deleted) is kept blank, decided for nobody: a delete erases what comes late
too (`Engine.ingest`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from core.decision import Decision, Disposition
from core.emission import Cancel, Emission, Typing
from core.events import ChatEvent, EventKind
from core.follow_up_records import follow_up_ids
from core.guards import UNANSWERED
from core.revisions import revise_for_edit
from core.state import State
from core.state_messages import stored_versions, was_deleted
from core.state_records import MessageRecord
from core.store import Deliveries, Ledger, Store

__all__ = [
    "TYPING_LASTS",
    "cancel_all",
    "delete_message",
    "edit_of_deleted",
    "fill_text",
    "revise_edit",
    "supersede_edited",
    "typing_hints",
]

TYPING_LASTS = timedelta(seconds=10)


def revise_edit(
    decisions: list[Decision], delivered: dict[str, Decision], answered: set[str]
) -> tuple[list[Decision], list[Emission]]:
    """The decisions for an edit, revised for what each agent was told of the message
    (`delivered`) and whether it answered, with a cancellation of each superseded delivery."""
    revised: list[Decision] = []
    cancels: list[Emission] = []
    for decision in decisions:
        prior = delivered.get(decision.agent)
        supersedes = prior.event_id if prior is not None else None
        revised.append(revise_for_edit(decision, prior, decision.agent in answered, supersedes))
        if supersedes is not None:
            cancels.append(Cancel(decision.agent, supersedes, "superseded"))
    return revised, cancels


def cancel_all(
    delivered: dict[str, Decision], agents: Sequence[str], reason: str
) -> list[Emission]:
    """A cancellation for every agent that was told of a message, in manifest order."""
    order = {agent: index for index, agent in enumerate(agents)}
    return [
        Cancel(agent, delivered[agent].event_id, reason)
        for agent in sorted(delivered, key=order.__getitem__)
    ]


async def delete_message(
    event: ChatEvent, state: State, store: Store, agents: Sequence[str], at: str
) -> list[Emission]:
    """A deleted message becomes a tombstone in the ledger, its edits too, held or not, and
    every delivery of them not answered yet is superseded; every agent the engine holds as told
    of it is told to drop it."""
    target = state.target(event)
    if target is None:
        versions = [entry.id for entry in await stored_versions(store, event)]
        await store.tombstone(versions)
        followed = await _supersede(versions, store, state, "deleted", at)
        return [Cancel(agent, event_id, "deleted") for agent, event_id in followed]
    if target.deleted:
        return []
    await store.tombstone(list(target.versions))
    followed = await _supersede(target.versions, store, state, "deleted", at)
    emissions = cancel_all(target.delivered, agents, "deleted")
    emissions += [Cancel(agent, event_id, "deleted") for agent, event_id in followed]
    state.apply(event, [])
    return emissions


async def supersede_edited(
    cancels: Sequence[Emission], deliveries: Deliveries, state: State, at: str
) -> list[Emission]:
    """An edit's cancellations (`revise_edit`): each agent's delivery of the version it had,
    if not answered yet, is `superseded` (reason `edited`), so a turn still at work on the old
    text posts nothing and the new version's own turn answers the words as they now are.
    Returns the cancellations of the follow-ups of those versions it superseded as well."""
    told: dict[str, set[str]] = {}
    for cancel in cancels:
        if isinstance(cancel, Cancel):
            told.setdefault(cancel.event_id, set()).add(cancel.agent)
    followed: list[Emission] = []
    for event_id, agents in told.items():
        for agent, follow_up in await _supersede(
            [event_id], deliveries, state, "edited", at, agents
        ):
            followed.append(Cancel(agent, follow_up, "superseded"))
    return followed


async def _supersede(
    event_ids: Sequence[str],
    deliveries: Deliveries,
    state: State,
    why: str,
    at: str,
    agents: set[str] | None = None,
) -> list[tuple[str, str]]:
    """Each delivery of these events and of their follow-ups (a reminder, a hand-over: they
    stand for the event under their own ids), to `agents` only when given, that its agent has
    not answered becomes `superseded` with `why`, and its obligation closes. Returns the agent
    and id of each follow-up superseded, for its cancellation."""
    followed: list[tuple[str, str]] = []
    for event_id in event_ids:
        for settled in (event_id, *follow_up_ids(event_id)):
            for delivery in await deliveries.deliveries(settled):
                agent = delivery.decision.agent
                if delivery.disposition in UNANSWERED and (agents is None or agent in agents):
                    superseded = Disposition.SUPERSEDED
                    await deliveries.set_disposition(settled, agent, superseded, why, at)
                    state.close_obligation(settled, agent)
                    if settled != event_id:
                        followed.append((agent, settled))
    return followed


async def edit_of_deleted(event: ChatEvent, target: MessageRecord | None, ledger: Ledger) -> bool:
    """Whether the message an edit is about was deleted: as the engine holds it (`target`), or
    as the ledger keeps it when the engine does not hold it."""
    if target is not None:
        return target.deleted
    return was_deleted(await stored_versions(ledger, event))


async def fill_text(event: ChatEvent, state: State, ledger: Ledger) -> None:
    """A bot not allowed to read message content receives messages blank; when a copy with
    the text arrives after a blank one, the ledger (and the state) take the text."""
    target = state.target(event)
    if (
        event.kind is EventKind.MESSAGE
        and event.text
        and target is not None
        and not target.text
        and not target.deleted
        and target.event_id == event.event_id
    ):
        await ledger.fill_text(event.event_id, event.text)
        target.text = event.text


def typing_hints(event: ChatEvent, targets: list[str], author: str | None) -> list[Emission]:
    """Someone typing, for each of `targets` but the author: it lasts `TYPING_LASTS`."""
    until = event.created_at + TYPING_LASTS
    conversation, who = event.conversation, event.author.id
    return [Typing(agent, conversation, who, until) for agent in targets if agent != author]
