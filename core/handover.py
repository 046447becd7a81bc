"""What becomes of the questions an agent owes while it is down: a role question goes to
another agent that is up, and any other shows that it waits.

Each sweep, for each question an agent that is down owes:

- the `seen` (👀) it put on the message before it went down becomes `blocked` (🚧), so the
  person sees that the question waits; once the agent is up the `blocked` becomes `seen` again
  (`core.acknowledgement.BlockedMarks`, under `lift_key`);
- a role question (a role mention, a group DM with several agents, a `select` broadcast) it was
  picked for goes to another candidate when one is up. The picked responder holds the event's
  claim (`core.deciding`); the other candidates were told of it as `claimed_by_other`. The
  claim moves to the new responder (`Claims.hand_over`: nothing moves if it is no longer the
  first one's), chosen as selection chooses (`least_busy` or `order`) among the candidates that
  are up and not muted; the first responder's delivery ends `superseded` ("handed over to
  ..."), and its harness is told `claimed_by_other` (a late answer from it is refused by the
  claim: `core.guards`); the new responder is told of the question as a follow-up event,
  `<event id>~handover` (like a reminder: the question's content under its own id, `reminds`
  naming it), `to_my_role` + `may_respond` + `buffered` with reason `handed_over`, holding that
  event's claim too, and acknowledges it with `seen` at once (where the workspace wants that).
  Its answer answers the question (`EnginePort`).

A question handed over whose new responder goes down too is handed over again, the same way,
to a candidate that is up and has not had it (one that had it went down with it: handing it
back would bounce it between agents that are both down), under `<event id>~handover~2` and so
on (`core.followup.handover_id`, at most `MAX_HANDOVERS` times); the previous follow-up's claim
moves too, so a late answer to it is refused. One with no such candidate waits for the agent
that has it, and its asker gets the notice (`core.followup`). The previous responder's status
is taken off the message (its 🚧, or its 👀 when it is handed over in the sweep that finds its
agent down: no 🚧 is put there first), so the person sees only the new responder's 👀. Each
time an agent is down with a question its 👀 becomes 🚧 again
(`core.acknowledgement.blocked_key`: one key per time).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING

from core.acknowledgement import acknowledgement, blocked_key, lift_key, taken_back
from core.action_records import from_record
from core.actions import React, reaction_key
from core.clock import format_time
from core.constraints import select_responder
from core.decision import Decision, Directedness, Disposition, InjectionMode, Policy
from core.emission import Cancel, Emission, Queued
from core.follow_up_records import (
    HANDED_OVER,
    HANDOVER_KIND,
    MAX_HANDOVERS,
    follow_up_data,
    follows_up,
    handover_id,
)
from core.settling import settle
from core.signals import Signal
from core.store import Store, StoredDelivery

if TYPE_CHECKING:
    from core.engine import Engine

__all__ = ["outages", "owed_deliveries", "while_down"]


async def owed_deliveries(
    engine: Engine, agent: str
) -> AsyncIterator[tuple[StoredDelivery, list[StoredDelivery]]]:
    """Each delivery of a question `agent` owes an answer (`Engine.owed`), with every agent's
    delivery of that question."""
    for event_id in engine.owed(agent):
        deliveries = await engine.store.deliveries(event_id)
        mine = next((d for d in deliveries if d.decision.agent == agent), None)
        if mine is not None:
            yield mine, deliveries


async def while_down(engine: Engine) -> list[Emission]:
    """Mark as waiting, or hand over, every open question of every agent that is down (see the
    module doc); in the caller's transaction. Returns what to send once it commits."""
    emissions: list[Emission] = []
    for agent in list(engine.unavailable):
        async for mine, deliveries in owed_deliveries(engine, agent):
            handed: list[Emission] = []
            if _picked(mine.decision):
                root = follows_up(mine.decision)  # None: `mine` is the question itself
                question = await engine.store.deliveries(root) if root else deliveries
                before = await _handovers(engine.store, question[0].decision.event_id)
                to = _successor(engine, question, before)
                if to is not None and len(before) < MAX_HANDOVERS:
                    handed = await _hand(engine, mine, question, len(before) + 1, to)
            emissions.extend(handed or await _blocked(engine, mine.decision))
    return emissions


async def _blocked(engine: Engine, decision: Decision) -> list[Emission]:
    """`blocked` in place of the `seen` the agent put on the question, once each time it is
    down; nothing when it put none (or the workspace shows none)."""
    store, key = engine.store, decision.idempotency_key
    outage = await outages(store, key)
    seen = await _seen_on(store, key, outage)
    if seen is None or await store.outbox_has(blocked_key(key, outage)):
        return []
    blocked = replace(
        seen,
        signal=Signal.BLOCKED,
        emoji=engine.glyphs.native(seen.platform, Signal.BLOCKED),
        key=blocked_key(key, outage),
        placed=frozenset({Signal.SEEN}),
    )
    if not await engine.queue_action(blocked, format_time(engine.clock.now())):
        return []
    engine.blocked.note(decision, blocked, outage)
    return [Queued(decision.agent, blocked)]


async def outages(store: Store, key: str) -> int:
    """How many times the agent of the question under `key` was down with it and is back: the
    `blocked` marks lifted (`core.acknowledgement.lift_key`)."""
    done = 0
    while await store.outbox_has(lift_key(key, done)):
        done += 1
    return done


async def _seen_on(store: Store, key: str, outage: int) -> React | None:
    """The agent's 👀 on the question as its `outage`-th time down begins: the first, or the one
    that lifted the last `blocked`; None when there is none (the workspace shows none)."""
    record = await store.outbox_get(
        lift_key(key, outage - 1) if outage else reaction_key(key, Signal.SEEN)
    )
    action = from_record(record.action) if record is not None else None
    return action if isinstance(action, React) and action.signal is Signal.SEEN else None


def _picked(decision: Decision) -> bool:
    """A question its agent owes as the responder picked among several, not one for it alone
    (`must_respond`): the pick itself, or a hand-over of one to it."""
    if decision.reason == HANDED_OVER:
        return True
    return (
        decision.policy is Policy.MAY_RESPOND
        and decision.claimed_by == decision.agent
        and follows_up(decision) is None
    )


async def _handovers(store: Store, root: str) -> list[list[StoredDelivery]]:
    """The deliveries of each hand-over the question `root` has had, in order."""
    handed: list[list[StoredDelivery]] = []
    while len(handed) < MAX_HANDOVERS:
        deliveries = await store.deliveries(handover_id(root, len(handed) + 1))
        if not deliveries:
            break
        handed.append(deliveries)
    return handed


def _successor(
    engine: Engine, question: list[StoredDelivery], handovers: list[list[StoredDelivery]]
) -> str | None:
    """The candidate the question (its deliveries) goes to next: one told another holds it that
    has not had it yet (the first pick and each hand-over's agent had it, and went down with
    it), up, not muted, selected as the workspace selects; None when there is none."""
    now, settings = engine.clock.now(), engine.workspace.settings
    had = {d.decision.agent for d in question if _picked(d.decision)}
    had.update(d.decision.agent for handed in handovers for d in handed)
    able = [
        d.decision.agent
        for d in question
        if d.decision.reason == "claimed_by_other"
        and d.decision.agent not in had
        and d.decision.agent not in engine.unavailable
        and not engine.state.is_muted(d.decision.agent, now)
    ]
    if not able:
        return None
    return select_responder(able, engine.state.busy, settings.selection, engine.workspace.agent_ids)


async def _hand(
    engine: Engine, first: StoredDelivery, question: list[StoredDelivery], n: int, to: str
) -> list[Emission]:
    """Hand `first`'s question (`question`, its deliveries) to `to`, its `n`-th hand-over (see
    the module doc); nothing when its claim is no longer `first`'s agent's."""
    store, state = engine.store, engine.state
    now, ttl = engine.clock.now(), engine.workspace.settings.claim_ttl_ms
    stamp = format_time(now)
    owed, agent = first.decision, first.decision.agent
    root = question[0].decision.event_id
    handed_id = handover_id(root, n)
    event = await engine.event(root)
    if event is None or not await store.hand_over(root, agent, to, now, ttl):
        return []
    data = await follow_up_data(store, question[0], handed_id, to, stamp)
    seq = await store.append(handed_id, HANDOVER_KIND, "system", data, stamp)
    if seq is None:
        return []
    held = await store.claim(handed_id, to, now, ttl)
    if owed.event_id != root:  # the hand-over it had: a late answer to it finds the new holder
        await store.hand_over(owed.event_id, agent, to, now, ttl)
    for item in {root, owed.event_id, handed_id}:
        state.note_claim(item, to, held.expires_at)
    decision = Decision(
        handed_id,
        to,
        Directedness.TO_MY_ROLE,
        Policy.MAY_RESPOND,
        InjectionMode.BUFFERED,
        HANDED_OVER,
        owed.priority,
        claimed_by=to,
    )
    await store.record_decisions(seq, [decision], stamp)
    state.note_owed(decision)
    why = f"handed over to {to}: {agent} is down"
    # its reminder of the question, if it had one, goes with it: no late answer to that either
    emissions: list[Emission] = [
        Cancel(agent, owed.event_id, "claimed_by_other"),
        *await settle(engine, agent, owed, Disposition.SUPERSEDED, why),
        await engine.deliveries.delivery(StoredDelivery(decision, seq, "pending", 0, None)),
    ]
    emissions += await _status_off(engine, owed, stamp)
    seen = engine.workspace.settings.seen_signal
    ack = acknowledgement(event, decision, engine.glyphs, down=False, seen=seen)
    if ack is not None and await engine.queue_action(ack, stamp):
        emissions.append(Queued(to, ack))
    return emissions


async def _status_off(engine: Engine, question: Decision, stamp: str) -> list[Emission]:
    """The status the first responder put on a question handed over (its 🚧, else its 👀)
    taken off, so the person sees only the new responder's."""
    key = question.idempotency_key
    placed = engine.blocked.forget(key) or await _seen_on(
        engine.store, key, await outages(engine.store, key)
    )
    if placed is None or placed.signal is None:
        return []
    off = taken_back(placed, placed.signal, reaction_key(key, placed.signal) + ":off")
    return [Queued(off.agent, off)] if await engine.queue_action(off, stamp) else []
