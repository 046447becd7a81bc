"""The messages the engine holds in memory: the newest `MESSAGES_HELD` it has seen, by key.

Every message the host ever saw used to stay in memory, so a host's memory grew with its
ledger (2.4 GB over a million rows). `HeldMessages` keeps the newest ones only, first in first
out by when each was first seen: an edit, delete, reaction or reply is nearly always about a
recent message. The bound is one for the whole workspace, not per conversation, so memory does
not grow with the number of conversations either.

An evicted message is one the host no longer holds: reading it (`State.target`,
`State.replied_message`, a thread's root, the `why` command) finds nothing, as for a message
the host never saw, and it is decided as such. The ledger still holds it, and where the engine
changes the ledger because of a message it reads the ledger instead (`Store.message_events`):
a delete of an evicted message still blanks the stored text of the message and its edits, and
an edit of an evicted message that was deleted is still dropped.
"""

from __future__ import annotations

from collections import deque
from typing import Final

from core.events import ChatEvent
from core.state_records import MessageRecord
from core.store import Ledger, LedgerEntry

__all__ = ["MESSAGES_HELD", "HeldMessages", "stored_versions", "was_deleted"]

MESSAGES_HELD: Final = 20_000
"""How many messages the engine holds: about 1 KB each, so some 20 MB, and more than a
conversation's worth of recent traffic in every channel of a busy workspace."""


class HeldMessages(dict[str, MessageRecord]):
    """Message records by key, at most `limit` of them: adding one past the limit evicts the
    one first added (a dict alone would find its oldest key in a scan over the holes its
    evictions left, so the order is kept beside it)."""

    __slots__ = ("_order", "limit")

    def __init__(self, limit: int = MESSAGES_HELD) -> None:
        super().__init__()
        self.limit = limit
        self._order: deque[str] = deque()

    def add(self, key: str, record: MessageRecord) -> None:
        """Hold `record` under `key` unless a record is held there already."""
        if key in self:
            return
        self[key] = record
        order = self._order
        order.append(key)
        if len(order) > self.limit:
            self.pop(order.popleft(), None)


async def stored_versions(ledger: Ledger, event: ChatEvent) -> list[LedgerEntry]:
    """The stored versions (the message, then its edits) of the message `event` is about, read
    from the ledger: for a message the engine does not hold."""
    if event.message_id is None:
        return []
    return await ledger.message_events(event.platform, event.conversation.id, event.message_id)


def was_deleted(versions: list[LedgerEntry]) -> bool:
    """Whether the ledger's versions of a message are a deleted message's tombstones."""
    return any(entry.data.get("deleted") for entry in versions)
