"""Muting an agent: it gets no new turns until a time (or until unmuted), whatever it is told.

A mute is a record in the ledger (`MUTED_KIND`, data `{"agent", "muted", "until"}`), so it
outlasts a restart and a reload: the engine folds every such record into its state
(`State.muted`) when it rebuilds, in ledger order, the last record of an agent winning. An
unmute is the same record with `muted` false. Deciding reads the state
(`core.constraints.constrain`): while muted, every message and edit is `must_not_respond`
with the reason `muted`, so no turn starts; once `until` has passed, the agent is decided as
before, with no record needed to end it.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from core.clock import format_time, parse_time
from core.store import Ledger

if TYPE_CHECKING:  # for types only: the state's imports lead to the store, which reads MUTED_KIND
    from core.state import State

__all__ = ["MUTED_KIND", "fold_mute", "record_mute"]

MUTED_KIND = "x.c2a.muted"


async def record_mute(
    ledger: Ledger, state: State, agent: str, now: datetime, until: datetime | None, *, muted: bool
) -> None:
    """Put `agent`'s mute (until `until`, None: until unmuted) or unmute in the ledger and
    the state. The caller owns the transaction."""
    stamp = format_time(now)
    record_id = f"muted:{agent}@{stamp}:{secrets.token_hex(4)}"
    data = {"agent": agent, "muted": muted, "until": format_time(until) if until else None}
    await ledger.append(record_id, MUTED_KIND, f"agent:{agent}", data, stamp)
    fold_mute(state, data)


def fold_mute(state: State, data: Mapping[str, Any]) -> None:
    """Apply one mute record's data to the state."""
    agent = str(data["agent"])
    if not data.get("muted"):
        state.muted.pop(agent, None)
        return
    until = data.get("until")
    state.muted[agent] = parse_time(until) if isinstance(until, str) else None
