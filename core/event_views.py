"""What an agent may read of the ledger: the events delivered to it, as `EventView`s.

Reads go to the host's ledger (never a harness's mailbox) and show only what was delivered to
the agent, with what the host decided for it; a conversation's reading leaves out its
housekeeping (who joined or left, which thread opened).
"""

from __future__ import annotations

from core.agent_port import EventFilter, EventView
from core.attachments import attachments_from_data
from core.store import LedgerEntry, Store, StoredDelivery

__all__ = ["events_seen", "thread_seen", "view"]

# Ledger kinds a conversation's reading leaves out: who joined, which thread opened.
_HOUSEKEEPING = frozenset({"x.c2a.member_joined", "x.c2a.member_left", "x.c2a.thread_created"})


async def events_seen(store: Store, agent: str, which: EventFilter) -> list[EventView]:
    """The events delivered to `agent` that `which` selects, oldest first."""
    rows = await store.seen_by(
        agent,
        conversation=which.conversation,
        before_seq=which.before_sequence,
        limit=which.limit,
    )
    return [view(e, d) for e, d in rows if which.policy in (None, d.decision.policy)]


async def thread_seen(
    store: Store, agent: str, conversation: str, thread: str | None, limit: int
) -> list[EventView]:
    """What was said in a conversation or one thread of it, as delivered to `agent`, `limit`
    events at most: a conversation's own lines without its threads' replies (as a platform's
    channel history shows it); a thread's message it hangs off, then its newest replies."""
    rows = await store.seen_by(agent, conversation=conversation, thread=thread or "", limit=limit)
    if thread is not None and rows:
        root = await _root(store, agent, rows[0][0], thread)
        if root is not None:
            rows = [root, *rows[1:]] if len(rows) == limit else [root, *rows]
    return [view(e, d) for e, d in rows if e.kind not in _HOUSEKEEPING]


async def _root(
    store: Store, agent: str, reply: LedgerEntry, thread: str
) -> tuple[LedgerEntry, StoredDelivery] | None:
    """The message a thread hangs off, as delivered to `agent`, or None: looked for in the
    reply's channel, then in its parent for a thread that is a channel of its own (Discord
    starts one from a message under the message's id)."""
    place = reply.data["conversation"]
    for channel in filter(None, (place["id"], place.get("parent_id"))):
        versions = await store.message_events(reply.data["platform"], channel, thread)
        if versions:  # the message as it was posted: its edits are events of their own
            for delivery in await store.deliveries(versions[0].id):
                if delivery.decision.agent == agent:
                    return versions[0], delivery
    return None


def view(entry: LedgerEntry, delivery: StoredDelivery) -> EventView:
    """A ledger entry as the agent it was delivered to sees it."""
    data = entry.data
    decision = delivery.decision
    return EventView(
        event_id=entry.id,
        sequence=entry.seq,
        kind=data["kind"],
        conversation=data["conversation"],
        author=data["author"],
        created_at=data["created_at"],
        text=data.get("text", ""),
        deleted=bool(data.get("deleted")),
        directedness=decision.directedness,
        policy=decision.policy,
        reason=decision.reason,
        disposition=delivery.disposition,
        attachments=attachments_from_data(data.get("attachments", ())),
        message_id=data.get("message_id"),
    )
