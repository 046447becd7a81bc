"""How long a workspace keeps what it stored: the manifest's `retention`, and pruning by it.

Without `retention:` a workspace keeps everything, as it always did. With `retention: {days:
N}` a running host drops, once an hour (`c2a.run_loops.retain`), what is older than N days:
ledger records with their receipts and decisions, sent and failed outbound actions, audit
records, quarantined payloads, escalations and expired claims; `c2a prune` does the same once.
What stays however old it is, and why, is `core.store_prune`'s: the ledger's newest record,
each conversation's newest message, every record a decision is still open on, the records of
who is where (memberships, threads made, mutes, agents who left), and what has not been sent.
Once pruned, an event that happened before what was pruned is not taken at all (`outlived`):
it is either one dropped and sent again, or one older than anything kept; the ledger keeps how
far it was pruned, so this holds for a prune by `c2a prune` and after the setting is removed.

What goes is gone for everyone: an agent's `read` no longer finds it, its own messages older
than that can no longer be edited or deleted through its tools (their outbox rows went), and an
edit or delete of an older message arriving from a platform finds nothing to change. A
platform's own history is its own, but one whose record c2a itself keeps (`KeepsRecord` in
`core.platform`) drops the same in the same round.

Pruning goes in batches (`BATCH` rows of each kind, one transaction each), so a running host
interleaves its own work with it. `rehearse` runs the same batches and rolls them back: what
a prune would drop, counted by the statements that would drop it (`c2a prune --dry-run`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Final

from pydantic import Field

from core.events import ChatEvent, EventKind
from core.manifest_sections import Strict
from core.store import Retention, Store
from core.store_prune import WHO_IS_WHERE

__all__ = [
    "BATCH",
    "MOST_DAYS",
    "RetentionSetting",
    "counted",
    "outlived",
    "prune",
    "prune_before",
    "rehearse",
]

BATCH: Final = 1000
MOST_DAYS: Final = 36500


class RetentionSetting(Strict):
    """`retention: {days: N}`: keep N days (1 to `MOST_DAYS`) of what is stored."""

    days: int = Field(ge=1, le=MOST_DAYS)


def prune_before(now: datetime, setting: RetentionSetting) -> datetime:
    """The moment before which `setting` keeps nothing it may drop."""
    return now - timedelta(days=setting.days)


def outlived(event: ChatEvent, pruned_before: datetime | None) -> bool:
    """Whether the host takes `event` as already had: it happened before what retention has
    pruned (`pruned_before`, as the store says: `Retention.pruned_before`). A platform that
    sends a dropped event again (the web chat hands back what the ledger lacks of its history
    at every start; a catch-up window longer than the retention) would otherwise have it taken
    as new, decided and perhaps answered. A delete is always taken (it only erases, and a
    message retention keeps may be its target), and so is what says who is where, which
    retention keeps (`core.store_prune.WHO_IS_WHERE`)."""
    return (
        pruned_before is not None
        and event.created_at < pruned_before
        and event.kind is not EventKind.DELETE
        and event.kind not in WHO_IS_WHERE
    )


async def prune(
    store: Retention,
    before: datetime,
    *,
    batch: int = BATCH,
    between: Callable[[], Awaitable[None]] | None = None,
) -> dict[str, int]:
    """Drop what may go from before `before`, a batch at a time until one drops nothing, and
    return how many rows of each kind went; `between` runs after each batch that dropped
    something (by default it lets the host's other tasks run)."""
    total: Counter[str] = Counter()
    after = 0
    while True:
        pruned = await store.prune_batch(before, batch, after)
        total.update(pruned.dropped)
        if not any(pruned.dropped.values()):
            return {what: total[what] for what in pruned.dropped}
        after = pruned.last
        await (between or _others)()


async def rehearse(store: Store, before: datetime, *, batch: int = BATCH) -> dict[str, int]:
    """What `prune(store, before)` would drop, dropping nothing: the same batches, in one
    transaction that is rolled back (a batch finds where the next starts by what the last one
    dropped, so each must see the others' work). The store is held meanwhile: on a shared
    ledger the hosts wait for it."""
    try:
        async with store.transaction():
            raise _Undone(await prune(store, before, batch=batch))
    except _Undone as undone:
        return undone.dropped


class _Undone(Exception):
    """Rolls a rehearsal back, carrying what it counted."""

    def __init__(self, dropped: dict[str, int]) -> None:
        super().__init__()
        self.dropped = dropped


async def _others() -> None:
    await asyncio.sleep(0)


def counted(dropped: dict[str, int]) -> str:
    """What `prune` dropped, for people: `receipts 12, decisions 4, ...` (`nothing`: none)."""
    return ", ".join(f"{what} {count}" for what, count in dropped.items() if count) or "nothing"
