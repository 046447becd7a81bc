"""Which agents are down (their harness or model), since when, and a signal each time that
changes, so what depends on it (🚧 in place of 👀 and back, a role question handed over) need
not wait for the next sweep to be shown."""

from __future__ import annotations

import asyncio
from datetime import datetime

__all__ = ["Unavailable"]


class Unavailable(dict[str, datetime]):
    """Agent → when it was found down. `changed` is set each time an agent goes down or comes
    back (not when one down is found down again); whoever acts on it clears it."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = asyncio.Event()

    def down(self, agent: str, since: datetime) -> None:
        if agent not in self:
            self[agent] = since
            self.changed.set()

    def up(self, agent: str) -> None:
        if self.pop(agent, None) is not None:
            self.changed.set()
