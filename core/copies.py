"""Which agents the engine decided each recent event for, so that a later copy of the event
(a platform sends one per agent connection) through an agent already decided is only a receipt.

A copy's ledger append finds the event there; without this memory the engine would ask the
ledger for its sequence number and for the agents it was decided for, and build the rules'
context to decide it for nobody. Only an event's first arrival is remembered, with the agents
decided in the same transaction that appended it: if that transaction rolls back, the event is
not in the ledger either, and its next copy is a first arrival again. An agent decided later
(a copy through an agent that could not see the event at first) is not added, so its copies
keep taking the full path. The memory is bounded: past `size` events the oldest is forgotten,
and a copy of it takes the full path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from core.state_recent import Recent

__all__ = ["REMEMBERED", "DecidedCopies"]

REMEMBERED: Final = 4096
"""Events remembered: the copies of one message arrive within moments of each other."""


class DecidedCopies:
    """The agents each of the newest `size` first arrivals was decided for."""

    __slots__ = ("_agents",)

    def __init__(self, size: int = REMEMBERED) -> None:
        self._agents: Recent[str, frozenset[str]] = Recent(size)

    def note(self, event_id: str, agents: Iterable[str]) -> None:
        """`event_id` arrived for the first time and was decided for `agents`."""
        self._agents.hold(event_id, frozenset(agents))

    def covers(self, event_id: str, agents: Iterable[str]) -> bool:
        """Whether `event_id` is remembered as decided for every one of `agents`."""
        decided = self._agents.get(event_id)
        return decided is not None and decided.issuperset(agents)
