"""The ledger records the engine's memory must know at its next fold: an agent left a
conversation (`x.c2a.left`), and, where several processes share the ledger, an agent ended an
event (`x.c2a.disposed`), a later copy of an event was decided for more agents
(`x.c2a.decided`) and a waiting question was found answered in the gap (`x.c2a.revised`):
the delivery rows say so too, but another process's memory folds only
records after its last (`Engine.catch_up`). Pure: each function gives the `Ledger.append`
arguments; `core.ledger_fold` folds them back.

An ended event's record names the event and its message (`message_of`), never its text, so a
delete that blanks the text leaves nothing of it here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from core.clock import format_time
from core.decision import Disposition
from core.events import ChatEvent
from core.state_records import message_of

__all__ = [
    "DECIDED_KIND",
    "DISPOSED_KIND",
    "LEFT_KIND",
    "REVISED_KIND",
    "Record",
    "decided_later",
    "disposed",
    "left",
    "revised",
]

LEFT_KIND: Final = "x.c2a.left"
DISPOSED_KIND: Final = "x.c2a.disposed"
DECIDED_KIND: Final = "x.c2a.decided"
REVISED_KIND: Final = "x.c2a.revised"

Record = tuple[str, str, str, dict[str, Any], str]
"""`Ledger.append`'s arguments: the record's id, kind, author, data and time."""


def left(agent: str, place: str, now: datetime) -> Record:
    """`agent` left `place` (`<channel>` or `<channel>/<thread>`) at `now`."""
    stamp = format_time(now)
    data = {"agent": agent, "place": place}
    return f"left:{agent}:{place}@{stamp}", LEFT_KIND, f"agent:{agent}", data, stamp


def disposed(event: ChatEvent, agent: str, disposition: Disposition, stamp: str) -> Record:
    """`agent` ended `event` with `disposition` (one record a disposition: a second of the
    same is the same record)."""
    data = {
        "agent": agent,
        "event": event.event_id,
        "message": message_of(event),
        "disposition": disposition.value,
    }
    record_id = f"disposed:{agent}:{event.event_id}:{disposition.value}"
    return record_id, DISPOSED_KIND, f"agent:{agent}", data, stamp


def decided_later(event_id: str, agents: list[str], stamp: str) -> Record:
    """A copy of `event_id` that came later was decided for `agents` (never decided for them
    before, so one record a copy)."""
    data = {"event": event_id, "agents": agents}
    return f"decided:{event_id}:{'+'.join(agents)}", DECIDED_KIND, "host", data, stamp


def revised(event_id: str, agent: str, stamp: str) -> Record:
    """`agent`'s waiting delivery of `event_id` was revised (`core.revisions.answered_in_gap`);
    the revised decision is in its delivery row."""
    data = {"event": event_id, "agent": agent}
    return f"revised:{agent}:{event_id}", REVISED_KIND, "host", data, stamp
