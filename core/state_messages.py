"""The messages the engine holds in memory: the newest `MESSAGES_HELD` it has seen, by key.

Every message the host ever saw used to stay in memory, so a host's memory grew with its
ledger (2.4 GB over a million rows). `State.messages` keeps the newest ones only, in a
`core.state_recent.Recent` map: a message is held once, when first seen (its edits, deletes
and reactions change its record in place and never move it), so the first seen is the first
evicted; an edit, delete, reaction or reply is nearly always about a recent message. The bound
is one for the whole workspace, not per conversation, so memory does not grow with the number
of conversations either.

An evicted message is one the host no longer holds: reading it (`State.target`,
`State.replied_message`, a thread's root, the `why` command) finds nothing, as for a message
the host never saw, and it is decided as such. The ledger still holds it, and where the engine
changes the ledger because of a message it reads the ledger instead (`Store.message_events`):
a delete of an evicted message still blanks the stored text of the message and its edits, and
an edit of an evicted message that was deleted is still dropped.
"""

from __future__ import annotations

from typing import Final

from core.events import ChatEvent
from core.store import Ledger, LedgerEntry

__all__ = ["MESSAGES_HELD", "stored_versions", "was_deleted"]

MESSAGES_HELD: Final = 20_000
"""How many messages the engine holds: about 1 KB each, so some 20 MB, and more than a
conversation's worth of recent traffic in every channel of a busy workspace."""


async def stored_versions(ledger: Ledger, event: ChatEvent) -> list[LedgerEntry]:
    """The stored versions (the message, then its edits) of the message `event` is about, read
    from the ledger: for a message the engine does not hold."""
    if event.message_id is None:
        return []
    return await ledger.message_events(event.platform, event.conversation.id, event.message_id)


def was_deleted(versions: list[LedgerEntry]) -> bool:
    """Whether the ledger's versions of a message are a deleted message's tombstones."""
    return any(entry.data.get("deleted") for entry in versions)
