"""A map that holds only its most recently written entries: the engine's per-conversation state.

The engine's memory of each conversation (who each agent talks with in a channel, a thread's
owner and posters, a person's run of fragments) used to stay for every conversation ever seen,
so a host's memory grew with the number of conversations (430 MB over 10,000). Each of those
only matters while the conversation is live, so each is a `Recent` map: writing an entry makes
it the newest, and past `limit` entries the least recently written one is evicted. What an
evicted entry means is said where each map is declared (`core.state`, `core.continuity`):
as a rule, exactly what a conversation the host never saw means.

An entry `spare` says must outlive its window (a thread an agent owns: a promise to a person)
is moved aside when its turn to be evicted comes, and still found by `Recent.held`. Those are
bounded too, by `spared_limit` of their own: past it, the one moved aside first (the least
recently written of them) is let go, as any other entry.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["Recent"]

K = TypeVar("K")
V = TypeVar("V")


class Recent(OrderedDict[K, V], Generic[K, V]):
    """Entries by key, oldest written first, at most `limit` of them besides the spared, and at
    most `spared_limit` spared (None: no bound)."""

    __slots__ = ("limit", "spare", "spared", "spared_limit")

    def __init__(
        self,
        limit: int,
        spare: Callable[[V], bool] | None = None,
        spared_limit: int | None = None,
    ) -> None:
        super().__init__()
        self.limit = limit
        self.spare = spare
        self.spared_limit = spared_limit
        self.spared: dict[K, V] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        """Copied (`copy.deepcopy`) with its limits, what it spares and what it spared."""
        state = (None, {"spared": self.spared})
        args = (self.limit, self.spare, self.spared_limit)
        return (type(self), args, state, None, iter(self.items()))

    def hold(self, key: K, value: V) -> V:
        """Hold `value` under `key` as the newest entry, evicting the oldest past the limit;
        returns `value`."""
        self.spared.pop(key, None)
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            old_key, old = self.popitem(last=False)
            if self.spare is not None and self.spare(old):
                self.spared[old_key] = old
                # Past their own bound, the one moved aside first (written least lately) goes.
                if self.spared_limit is not None and len(self.spared) > self.spared_limit:
                    del self.spared[next(iter(self.spared))]
        return value

    def held(self, key: K) -> V | None:
        """The entry under `key`, spared or not, or None."""
        found = self.get(key)
        return self.spared.get(key) if found is None else found
