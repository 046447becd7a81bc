"""The attention model as the web chat page shows it beside a message: for every agent, the
decision the core made and the disposition as the agent acts, read from the ledger, never from
a harness."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from adapters.webchat.history import Message
from adapters.webchat.normalise import event_id
from core.store import Store, StoredDelivery

__all__ = ["attention_of", "attention_of_people", "chip"]


async def attention_of(
    store: Store, workspace: str, agents: Sequence[str], message: Message
) -> list[dict[str, Any]]:
    """One `chip` per agent the ledger holds a delivery of `message` (or of its latest edit)
    for, in the order of `agents`."""
    base = event_id(workspace, message.id)
    deliveries = store.deliveries
    rows: dict[str, StoredDelivery] = {d.decision.agent: d for d in await deliveries(base)}
    for edit in message.edits:
        rows.update((d.decision.agent, d) for d in await deliveries(f"{base}~{edit}"))
    return [chip(rows[agent]) for agent in agents if agent in rows]


async def attention_of_people(
    store: Store, workspace: str, agents: Sequence[str], messages: Sequence[Message], now: datetime
) -> dict[str, list[dict[str, Any]]]:
    """The chips of each person's message among `messages` (agents' own are not decided for
    a reply), each saying whether its agent holds the message's claim (`holdsClaim`)."""
    held = await store.claims(now)
    shown: dict[str, list[dict[str, Any]]] = {}
    for message in messages:
        if message.user in agents:
            continue
        holder = held.get(event_id(workspace, message.id), (None,))[0]
        chips = await attention_of(store, workspace, agents, message)
        shown[message.id] = [{**c, "holdsClaim": c["agent"] == holder} for c in chips]
    return shown


def chip(delivery: StoredDelivery) -> dict[str, Any]:
    """What the page shows of one agent's delivery: the decision and where it stands."""
    decision = delivery.decision
    return {
        "agent": decision.agent,
        "directedness": decision.directedness.value,
        "policy": decision.policy.value,
        "mode": decision.mode.value,
        "reason": decision.reason,
        "status": delivery.status,
        "disposition": delivery.disposition.value if delivery.disposition else None,
        "claimedBy": decision.claimed_by,
    }
