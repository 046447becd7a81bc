"""A start finishes what the process before it left cut short: the message shows it was cut,
the question is its agent's again, once, and the answer begun alike counts as the answer."""

from __future__ import annotations

from agent_world import DM, port_scenario

from core.agent_port import Outgoing
from core.decision import Disposition
from core.drafts import CUT_SHORT, WRITING
from core.engine import Engine
from core.engine_port import EnginePort
from core.restart import finish_cut_replies
from core.sqlite_store import SQLiteStore


async def owed(store: SQLiteStore, event_id: str) -> tuple[str, Disposition | None]:
    [delivery] = [d for d in await store.deliveries(event_id) if d.decision.agent == "lead"]
    return delivery.status, delivery.disposition


def test_a_cut_reply_is_finished_as_cut_and_its_question_given_back_once() -> None:
    async def test(engine: Engine, ports: dict[str, EnginePort], store: SQLiteStore) -> None:
        async with store.transaction():
            await store.mark_delivered(DM, "lead", 1)  # the harness took it
        begun = Outgoing(conversation="D0LEAD", text="Gre" + WRITING, in_reply_to=DM)
        sent = await ports["lead"].send(begun)
        async with store.transaction():
            await store.outbox_mark(sent.key, "sent", "2026-01-01T00:00:11Z", {"messageId": "9.0"})
        assert await owed(store, DM) == ("delivered", Disposition.RESPONDED)

        async with store.transaction():
            assert await finish_cut_replies(engine) == 1
            assert await finish_cut_replies(engine) == 0  # finished: not found again
        finished = await store.outbox_get(f"{sent.key}:cut")
        assert finished is not None and finished.action["text"] == "Gre" + CUT_SHORT
        assert finished.action["messageId"] == "9.0"
        assert await owed(store, DM) == ("pending", Disposition.FAILED)
        assert await ports["lead"].owed([DM]) == [DM]

        again = await ports["lead"].send(begun)  # the new answer begins as the cut one did
        assert (again.key, again.new) == (sent.key, False)
        assert await owed(store, DM) == ("pending", Disposition.RESPONDED)

    port_scenario(test)
