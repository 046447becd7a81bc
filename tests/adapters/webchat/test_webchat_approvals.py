"""An ACP agent's permission request asked on the web chat, end to end: a person's DM to the
lead starts a turn of the fake ACP agent (a real subprocess), which asks leave to run
`shell_exec`; the question appears on the page with buttons, through the outbox and the web
chat's sender; a press is `POST /approve` behind the page's access guard. A non-approver's
press is refused with the reason and decides nothing; the approver's lets the tool run, and
the message is edited to say who decided, its buttons gone. Silence past the deadline is a
refusal, and the message says nobody answered."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
from builders import LOCAL
from live_webchat import Chat, running
from outbox_pump import pumped

from adapters.webchat.history import Message
from adapters.webchat.normalise import dm_channel, event_id
from core.clock import SystemClock
from core.engine_port import EnginePort
from core.outbox import Outbox
from harness_bridge.backends.acp import AcpModelLoop
from harness_bridge.backends.acp_tools import mcp_server_entry
from harness_bridge.envelope import deliver_request
from harness_bridge.turns import Turn

FAKE = str(Path(__file__).parents[2] / "harness_bridge" / "fake_acp_agent.py")
YES = {"outcome": "selected", "optionId": "yes"}
NO = {"outcome": "selected", "optionId": "no"}


async def lead_turn(chat: Chat, message_id: str) -> Turn:
    """The lead's turn answering a web chat message."""
    engine = chat.host.engine
    deliveries = await engine.store.deliveries(event_id(chat.chat.workspace, message_id))
    (delivery,) = [d for d in deliveries if d.decision.agent == "lead"]
    message = deliver_request(await engine.deliveries.delivery(delivery), compact=False, attempt=1)
    return Turn(engine.clock.now(), "immediate", (dict(message["params"]),))


def loop_of(chat: Chat, tmp_path: Path, record: Path) -> AcpModelLoop:
    ledger = str(tmp_path / "ledger.sqlite3")
    return AcpModelLoop(
        EnginePort(chat.host.engine, "lead"),
        [sys.executable, FAKE],
        mcp_server_entry("lead", str(LOCAL), ledger),
        allow=["chat_send_message"],
        env={"FAKE_ACP_RECORD": str(record), "FAKE_ACP_ASK": "shell_exec"},
    )


@asynccontextmanager
async def asking(tmp_path: Path) -> AsyncIterator[tuple[Chat, AcpModelLoop, Outbox]]:
    """The chat, the lead's ACP loop asking for `shell_exec` (ana is the lead's approver), and
    the outbox to pump."""
    async with running(tmp_path) as chat, loop_of(chat, tmp_path, record_of(tmp_path)) as loop:
        engine = chat.host.engine
        engine.approvals.approvers["lead"] = ("ana",)
        yield chat, loop, Outbox(chat.store, engine.clock, {"webchat": chat.sender})


def record_of(tmp_path: Path) -> Path:
    return tmp_path / "agent.jsonl"


def permissions(tmp_path: Path) -> list[Any]:
    """The answers the agent got to its permission requests."""
    lines = record_of(tmp_path).read_text(encoding="utf-8").splitlines()
    return [r["outcome"] for r in map(json.loads, lines) if r["kind"] == "permission"]


async def ask_frame(chat: Chat, *, open_: bool) -> dict[str, Any]:
    """The first `ask` frame showing buttons (`open_`) or clearing them, however long the
    agent subprocess takes to start (the caller bounds the wait)."""
    while True:
        for frame in chat.frames:
            if frame["op"] == "ask" and bool(frame["choices"]) is open_:
                return frame
        await asyncio.sleep(0.02)


def allow_once(frame: dict[str, Any]) -> str:
    """The id of the question's "Allow once" choice."""
    return next(c["id"] for c in frame["choices"] if c["label"] == "Allow once")


async def press(chat: Chat, user: str, frame: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    body = {"as": user, "request": frame["request"], "choice": allow_once(frame)}
    async with (
        aiohttp.ClientSession() as http,
        http.post(chat.chat.link("/approve"), json=body, headers={"Origin": chat.chat.origin}) as r,
    ):
        return r.status, await r.json()


async def lead_asked_to_run_tests(chat: Chat, loop: AcpModelLoop) -> asyncio.Task[Any]:
    """ana asks the lead, in their DM, to run the tests: the lead's turn, started."""
    said = await chat.chat.say("ana", dm_channel("ana", "lead"), "please run the tests")
    return asyncio.create_task(loop.run(await lead_turn(chat, said.id)))


async def closed(chat: Chat, asked: dict[str, Any]) -> Message:
    """The question once its buttons are gone, which a press can no longer answer."""
    await ask_frame(chat, open_=False)
    assert await press(chat, "ana", asked) == (
        409,
        {"refused": "this question is no longer open"},
    )
    return chat.chat.history.messages[asked["id"]]


def test_on_the_web_chat_a_non_approver_is_refused_and_an_approver_s_press_lets_the_tool_run(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with asking(tmp_path) as (chat, loop, outbox):
            turn = await lead_asked_to_run_tests(chat, loop)

            async with pumped(outbox), asyncio.timeout(120):
                asked = await ask_frame(chat, open_=True)
                assert [c["label"] for c in asked["choices"]] == ["Allow once", "Reject"]
                assert await press(chat, "ben", asked) == (
                    403,
                    {"refused": "ben, only lead's approvers can answer this."},
                )
                assert not turn.done()
                assert await press(chat, "ana", asked) == (200, {"decided": allow_once(asked)})
                assert (await turn).status == "completed"
                question = await closed(chat, asked)
                assert question.user == "lead" and question.edited
                assert "Allow once, by ana at " in question.text
        assert permissions(tmp_path) == [YES]

    asyncio.run(main())


class Later(SystemClock):
    """The system clock, moved on by hand: the approvals' deadline passes without a wait."""

    def __init__(self) -> None:
        self.ahead = timedelta()

    def now(self) -> datetime:
        return super().now() + self.ahead


def test_on_the_web_chat_silence_past_the_deadline_is_a_refusal(tmp_path: Path) -> None:
    async def main() -> None:
        async with asking(tmp_path) as (chat, loop, outbox):
            clock = Later()
            chat.host.engine.approvals.clock = clock
            turn = await lead_asked_to_run_tests(chat, loop)

            async with pumped(outbox), asyncio.timeout(120):
                asked = await ask_frame(chat, open_=True)
                clock.ahead = timedelta(hours=1)  # past any deadline the manifest may set
                assert (await turn).status == "completed"
                question = await closed(chat, asked)
                assert "No answer by " in question.text
        assert permissions(tmp_path) == [NO]

    asyncio.run(main())
