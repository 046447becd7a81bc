"""A message deleted or edited while its delivery still waits at the host (the harness busy,
backing off, down), and a cancellation that reaches the harness before the delivery it
cancels: the model never reads the words that are gone (spec 000: "If a message is deleted
before response, cancel the pending event")."""

from __future__ import annotations

import asyncio

from builders import ingest_slack, slack_body, slack_delete, slack_edit
from test_runtime import Recording, Separate, lead_harness, running, until_idle
from world import BASE, DM, scenario

from core.clock import SystemClock
from core.emission import Cancel
from core.engine import Engine
from core.sqlite_store import SQLiteStore
from harness_bridge.runtime import InProcessHarness
from harness_bridge.tools import ChatTools

DM_TS = f"{BASE + 1}.000100"
DM_TEXT = "can you check the deploy?"


def in_the_dm(event: dict[str, object]) -> dict[str, object]:
    return slack_body({**event, "channel": "D0LEAD", "channel_type": "im"}, via="lead")


def shown(loop: Recording) -> list[str]:
    """Every event the model was given, in a turn or injected into one."""
    return [*(event for turn in loop.turns for event in turn), *loop.injected]


async def status_of(store: SQLiteStore, event_id: str) -> tuple[str, str | None]:
    (lead,) = [d for d in await store.deliveries(event_id) if d.decision.agent == "lead"]
    return lead.status, lead.disposition.value if lead.disposition else None


def test_a_message_deleted_before_its_delivery_is_never_sent() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        await ingest_slack(engine, [in_the_dm(slack_delete(DM_TS, f"{BASE + 9}.000100", DM_TEXT))])
        assert await status_of(store, DM) == ("withdrawn", "superseded")
        assert DM not in [d.decision.event_id for d in await store.pending("lead")]
        loop = Recording()
        await until_idle(lead_harness(engine, tools, loop))
        assert DM not in shown(loop)

    scenario(test)


def test_a_message_edited_before_its_delivery_is_sent_as_edited_only() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        edit = slack_edit(DM_TS, f"{BASE + 9}.000100", DM_TEXT, "can you check the prod deploy?")
        await ingest_slack(engine, [in_the_dm(edit)])
        assert await status_of(store, DM) == ("withdrawn", "superseded")
        loop = Recording()
        harness = lead_harness(engine, tools, loop)
        await until_idle(harness)
        assert [e for e in shown(loop) if e.startswith(DM)] == [f"{DM}~{BASE + 9}.000100"]

    scenario(test)


def test_a_cancellation_that_comes_before_its_delivery_keeps_it_from_the_model() -> None:
    """The host read the delivery before the message went and sends it after the
    cancellation: the harness acknowledges it and never injects it."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        loop = Recording()
        harness = lead_harness(engine, tools, loop)
        async with running(harness) as deliverer:
            await deliverer.tell(Cancel("lead", DM, "deleted"))
            assert await deliverer.resume() >= 1
            await harness.idle()
        assert DM not in shown(loop)
        assert await status_of(store, DM) == ("delivered", None)

    scenario(test)


def test_a_message_deleted_with_no_cancellation_told_is_left_out_when_its_turn_starts() -> None:
    """Another process took the delete (several hosts on one ledger), or the cancellation was
    dropped: the turn reads the ledger as it starts, and leaves the message out."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        loop = Separate()  # nothing joins the thanks' turn: the DM gathers on its own
        harness = InProcessHarness(
            tools["lead"].port, engine.deliveries, loop, SystemClock(), quiet_ms=300
        )
        async with running(harness) as deliverer:
            await deliverer.resume()  # the DM gathers for its compose window
            delete = slack_delete(DM_TS, f"{BASE + 9}.000100", DM_TEXT)
            await ingest_slack(engine, [in_the_dm(delete)])  # nobody tells the harness
            async with asyncio.timeout(10):
                await harness.idle()
        assert DM not in shown(loop)
        assert await status_of(store, DM) == ("delivered", "superseded")

    scenario(test)
