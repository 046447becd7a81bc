"""A streamed reply in the web chat end to end: the agent's port, the outbox and the web chat's
sender, read as the page reads it, from its websocket; fed a long answer on a virtual clock."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from live_webchat import Chat, running
from streamed_answer import Redraws, exact, stream

from adapters.webchat.normalise import event_id
from core.clock import SystemClock, VirtualClock
from core.codec import event_from_data
from core.engine_port import EnginePort
from core.events import ChatEvent, EventKind
from core.outbox import Outbox
from harness_bridge.tools import ChatTools

TEXTS = (EventKind.MESSAGE, EventKind.EDIT)


def test_a_long_streamed_reply_is_one_message_redrawn_at_most_once_a_second(
    tmp_path: Path,
) -> None:
    """The page shows one message from the lead, redrawn as it grows, never twice within a
    second, ending with the whole answer; the record and the ledger keep that final text."""

    async def scenario() -> None:
        async with running(tmp_path) as chat:
            asked = await chat.chat.say("ana", "general", "@lead write the whole report")
            clock = VirtualClock(datetime(2026, 1, 1, tzinfo=UTC))
            outbox = Outbox(chat.store, SystemClock(), {"webchat": chat.sender})
            redraws = Redraws()
            read = 0

            async def drain() -> None:
                nonlocal read
                if not await outbox.drain():
                    return
                await received(chat)
                for frame in chat.frames[read:]:
                    if frame["op"] == "message" and frame["message"]["user"] == "lead":
                        redraws.at(frame["message"]["id"], clock.now().timestamp())
                read = len(chat.frames)

            engine = chat.host.engine
            async with asyncio.timeout(120):
                reply = await stream(engine, event_id("local", asked.id), clock, drain, limit=None)

            shown = page(chat.frames)
            assert list(shown) == [next(iter(redraws.times))] and len(reply.keys) == 1
            assert exact(shown.values())
            assert len(redraws.times[next(iter(shown))]) >= 20  # redrawn as it grew
            assert redraws.paced()
            (recorded,) = [m for m in chat.chat.history.messages.values() if m.user == "lead"]
            assert recorded.text == "".join(shown.values())
            said = [e for e in ledger(chat) if e.author.id == "lead" and e.kind in TEXTS]
            assert [e.kind for e in said] == [*TEXTS]  # the post and its final edit, no draft
            assert said[-1].text == recorded.text
            # Finishing the answer is not an edit; the agent's edit of it afterwards is.
            assert not recorded.edited and not last_frame(chat.frames, recorded.id)["edited"]
            tools = ChatTools(EnginePort(engine, "lead"))
            edit = {"idempotencyKey": reply.keys[0], "text": "The report, corrected."}
            await tools.call("chat_edit_message", edit)
            await drain()
            assert recorded.edited and last_frame(chat.frames, recorded.id)["edited"]

    asyncio.run(scenario())


async def received(chat: Chat) -> None:
    """Waits until the page has every frame sent before now: the server answers a bad request
    in order, after them."""
    errors = sum(1 for f in chat.frames if f["op"] == "error")
    await chat.request("not-an-op")
    await chat.frame(lambda _: sum(1 for f in chat.frames if f["op"] == "error") > errors)


def ledger(chat: Chat) -> list[ChatEvent]:
    """Every event the ledger holds, oldest first."""
    rows = chat.store.db.execute("SELECT data FROM events ORDER BY seq").fetchall()
    return [event_from_data(json.loads(data)) for (data,) in rows]


def last_frame(frames: list[dict[str, Any]], message_id: str) -> dict[str, Any]:
    """The message `message_id` as the page last drew it."""
    drawn = [f["message"] for f in frames if f["op"] == "message"]
    return [m for m in drawn if m["id"] == message_id][-1]


def page(frames: list[dict[str, Any]]) -> dict[str, str]:
    """The lead's messages as the page last drew them, in the order they first appeared."""
    shown: dict[str, str] = {}
    for frame in frames:
        if frame["op"] == "message" and frame["message"]["user"] == "lead":
            shown[frame["message"]["id"]] = frame["message"]["text"]
    return shown
