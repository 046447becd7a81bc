"""An event that happened before what retention has pruned from the ledger is not taken: a
platform that sends a dropped one again (the web chat reads its whole history back at every
start) does not have it decided and answered a second time. How far it was pruned is read from
the ledger at a start and told by the retention's loop; a delete and a change of who is where
are taken whatever their age; a ledger never pruned takes every event, as before."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from builders import (
    HUMAN,
    LEAD,
    local_workspace,
    slack_body,
    slack_delete,
    slack_join,
    slack_message,
)

from adapters.slack import normalise
from core.clock import VirtualClock
from core.engine import Engine
from core.events import ChatEvent
from core.sqlite_store import SQLiteStore

BASE = 1767225600  # 2026-01-01T00:00:00Z
NOW = datetime(2026, 3, 2, tzinfo=UTC)
FEBRUARY = datetime(2026, 2, 1, tzinfo=UTC)


def slack(event: dict[str, object]) -> ChatEvent:
    normalised = normalise(slack_body(event))
    assert normalised is not None
    return normalised


def taken(pruned: datetime | None, *events: ChatEvent, told: datetime | None = None) -> list[str]:
    """How a starting engine took each event, its ledger pruned before `pruned` (not at all:
    None), and told by the retention's loop that it pruned before `told` once it started."""

    async def scenario() -> list[str]:
        store = SQLiteStore()
        await store.open()
        if pruned is not None:
            await store.prune_batch(pruned, 100)
        engine = Engine(local_workspace(), store, VirtualClock(NOW))
        await engine.start()
        engine.note_pruned(told)
        try:
            return [(await engine.ingest(event)).status for event in events]
        finally:
            await store.close()

    return asyncio.run(scenario())


OLD = slack(slack_message(f"{BASE}.000100", f"<@{LEAD}> is the deploy done?", user=HUMAN))
RECENT = slack(slack_message(f"{BASE + 59 * 86400}.000100", f"<@{LEAD}> and now?", user=HUMAN))
DELETED = slack(slack_delete(f"{BASE}.000200", f"{BASE}.000100", "is the deploy done?"))
JOINED = slack(slack_join(LEAD))  # on 2025-12-31


def test_what_happened_before_the_ledger_was_pruned_is_taken_as_had() -> None:
    assert taken(FEBRUARY, OLD, RECENT) == ["repeat", "new"]
    assert taken(None, OLD, RECENT) == ["new", "new"]
    assert taken(None, OLD, told=FEBRUARY) == ["repeat"]  # the loop pruned while it ran
    assert taken(datetime(2025, 12, 1, tzinfo=UTC), OLD) == ["new"]


def test_a_delete_and_a_membership_are_taken_whatever_their_age() -> None:
    assert taken(FEBRUARY, DELETED, JOINED) == ["new", "new"]
