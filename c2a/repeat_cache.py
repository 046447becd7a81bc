"""The host's memory of recently normalised events, so that a platform's later copies of one
event (one per agent connection) are not normalised again.

A platform that says how (`core.platform.Repeats`) gives each payload a cheap key; the first
payload of a key is normalised and its event kept, and a later one of the same key is the kept
event given its own delivery facts (`Repeats.restamp`). Nothing else of the receive path is
skipped: the engine still records which agent's connection received the copy and decides it
for agents new to it, exactly as for a copy it normalised. The memory is bounded: past `size`
events the oldest is forgotten, and a copy of it is simply normalised again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from core.events import ChatEvent
from core.platform import Normaliser, Platform, Repeats
from core.state_recent import Recent

__all__ = ["CACHE_SIZE", "RepeatCache", "repeat_readers"]

CACHE_SIZE: Final = 1024
"""Events remembered: the copies of one message arrive within moments of each other, so a
thousand covers any burst the ledger keeps up with."""


def repeat_readers(platforms: Mapping[str, Platform]) -> dict[str, Repeats]:
    """Each platform's way of knowing its repeats, by name, for those that have one."""
    return {name: p.repeats for name, p in platforms.items() if p.repeats is not None}


class RepeatCache:
    """Reads payloads into events, normalising each event's first copy only."""

    def __init__(self, readers: Mapping[str, Repeats], size: int = CACHE_SIZE) -> None:
        self.readers = dict(readers)
        self.hits = 0
        self._events: Recent[tuple[str, str], ChatEvent] = Recent(size)

    def read(
        self, platform: str, payload: Mapping[str, Any], normalise: Normaliser
    ) -> ChatEvent | None:
        """`payload`'s event: a remembered one restamped when `payload` is a later copy, else
        `normalise(payload)`. Raises what normalising or restamping raises."""
        reader = self.readers.get(platform)
        key = None if reader is None else reader.key(payload)
        if reader is None or key is None:
            return normalise(payload)
        slot = (platform, key)
        kept = self._events.get(slot)
        if kept is not None:
            self.hits += 1
            return reader.restamp(kept, payload)
        event = normalise(payload)
        if event is not None:
            self._events.hold(slot, event)
        return event
