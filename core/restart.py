"""What a start does about work the process before it left half done: a streamed reply cut
short by a crash or a kill, and questions a built-in harness was told of and never answered.

Such a reply's message still ends with the mark of one being written (`core.drafts`), and the
question it answered counts as answered. At the next start, before any harness runs, each one
found among the outbox's newest `NEWEST` actions is finished honestly: a message that showed
is edited to the last text it showed and `CUT_SHORT` (a post that never went is not sent), and
the question is its agent's again: `failed` (which a reply may still answer) and pending, so
the agent's harness is told of it again and answers it whole. Where the new answer begins as
the cut one did, it has the same key and is drawn over the cut message (`EnginePort.send`
counts that repeat as the answer).

A built-in harness keeps what it is told in the host's memory: a question it acknowledged
(the person already sees its `seen` reaction) and had not answered when the process stopped,
a role question it was picked for too, would wait for the follow-up's reminder, minutes later.
`tell_again` sets those still within the answer deadline back to pending, so the fresh
harness is told of them (a higher attempt) and answers; the reminder takes the older ones.

The 🚧 (`blocked`) put on a question while its agent was down is replaced by 👀 once the agent
is up (`core.acknowledgement.BlockedMarks`), which the engine remembers in memory only:
`blocked_again` finds those still on questions their agents owe, so the first sweep replaces
them unless the agent is found down again first.

Only where this process alone writes the ledger: where several share it, another may still
be writing the reply, or running the harness (`core.store.Store.shared`).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta
from typing import Final

from core.acknowledgement import blocked_key
from core.action_records import from_record
from core.actions import Edit, React
from core.clock import format_time
from core.decision import Disposition
from core.drafts import CUT_KEY, CUT_SHORT, CutReply, cut_replies
from core.engine import Engine
from core.handover import outages, owed_deliveries

__all__ = ["NEWEST", "blocked_again", "finish_cut_replies", "tell_again"]

NEWEST: Final = 1_000
"""How many of the outbox's newest actions are read for cut replies: a reply being written
when the process stopped is among its last few (a redraw a second at most)."""
WHY: Final = "its answer was cut short when the host stopped"


async def finish_cut_replies(engine: Engine) -> int:
    """Finish every cut reply and give its question back to its agent; in the caller's
    transaction. Returns how many there were."""
    store = engine.store
    at = format_time(engine.clock.now())
    cut = cut_replies(await store.outbox_newest(NEWEST))
    for reply in cut:
        post, record = reply.post, reply.post.action
        message_id = (post.result or {}).get("messageId")
        if reply.shown and isinstance(message_id, str):
            await engine.queue_action(_finished(reply, message_id), at)
        else:
            await store.outbox_mark(post.key, "failed", at, {"error": WHY})
        asked = record.get("inReplyTo")
        if isinstance(asked, str) and await engine.dispose(
            post.agent, asked, Disposition.FAILED, WHY
        ):
            await store.set_status(asked, post.agent, "pending")
    return len(cut)


async def tell_again(engine: Engine, agents: Collection[str]) -> int:
    """Set back to pending every question one of `agents` acknowledged and has not answered
    (`must_respond`, or a role question it was picked for) decided within the answer deadline:
    older ones are the follow-up's to remind (`core.followup`). In the caller's transaction;
    returns how many."""
    store, now = engine.store, engine.clock.now()
    deadline = timedelta(milliseconds=engine.workspace.settings.deadline_ms)
    reminded = {(d.seq, d.decision.agent) for d in await store.overdue(format_time(now - deadline))}
    again = [
        delivery
        for delivery in await store.overdue(format_time(now))
        if delivery.decision.agent in agents
        and (delivery.seq, delivery.decision.agent) not in reminded
    ]
    for delivery in again:
        await store.set_status(delivery.decision.event_id, delivery.decision.agent, "pending")
    return len(again)


async def blocked_again(engine: Engine) -> int:
    """Give `Engine.blocked` each `blocked` mark still on a question its agent owes (see the
    module doc); in the caller's transaction. Returns how many."""
    store, found = engine.store, 0
    for agent in engine.workspace.agent_ids:
        async for mine, _ in owed_deliveries(engine, agent):
            key = mine.decision.idempotency_key
            outage = await outages(store, key)  # the lifted ones; the next is not
            placed = await store.outbox_get(blocked_key(key, outage))
            action = from_record(placed.action) if placed is not None else None
            if isinstance(action, React):
                engine.blocked.note(mine.decision, action, outage)
                found += 1
    return found


def _finished(reply: CutReply, message_id: str) -> Edit:
    record = reply.post.action
    return Edit(
        agent=reply.post.agent,
        platform=str(record["platform"]),
        conversation=str(record["conversation"]),
        key=reply.post.key + CUT_KEY,
        message_id=message_id,
        text=reply.text + CUT_SHORT,
        thread=record.get("thread"),
        mentions=tuple(record.get("mentions", ())),
    )
