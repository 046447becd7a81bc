"""The live web chat for tests: the real aiohttp server on 127.0.0.1 with its host, a SQLite
ledger and the outbox's sender, and one browser's websocket to it; and what a real browser's
page draws of an agent's post (`drawn`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
from builders import local_workspace
from chromium import wait
from selenium.webdriver.remote.webdriver import WebDriver

from adapters.webchat.send import WebchatSender
from adapters.webchat.server import Models, WebChat
from c2a.host import Host
from core.actions import Post
from core.clock import SystemClock
from core.command_answers import Commands
from core.emission import Emission
from core.manifest import Workspace
from core.sqlite_store import SQLiteStore

__all__ = ["Chat", "drawn", "run", "running"]


class Chat:
    """A web chat on a free port with its host, ledger and sender, and one browser socket."""

    def __init__(
        self, tmp: Path, workspace: Workspace | None = None, models: Models | None = None
    ) -> None:
        self.workspace = workspace or local_workspace()
        self.store = SQLiteStore(str(tmp / "ledger.sqlite3"))
        self.emissions: list[Emission] = []
        self.host = Host(self.workspace, self.store, SystemClock(), self._sink)
        self.chat = WebChat(
            self.workspace,
            self.host.receive,
            self.store,
            SystemClock(),
            history=tmp / "webchat.jsonl",
            port=0,
            models=models,
            approvals=self.host.engine.approvals,
            commands=Commands(self.host.engine, self._sink),
        )
        self.sender = WebchatSender(self.chat, self.workspace.glyphs)
        self.frames: list[dict[str, Any]] = []
        self._arrived = asyncio.Condition()
        self.socket: aiohttp.ClientWebSocketResponse | None = None

    async def _sink(self, emissions: list[Emission]) -> None:
        self.emissions += emissions

    async def request(self, op: str, **fields: Any) -> None:
        assert self.socket is not None
        await self.socket.send_json({"op": op, "as": "ana", **fields})

    async def frame(self, test: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first frame from the server that passes `test`, waiting up to 5 s."""
        async with asyncio.timeout(5), self._arrived:
            await self._arrived.wait_for(lambda: any(test(f) for f in self.frames))
        return next(f for f in self.frames if test(f))

    async def frames_of(self, op: str, count: int) -> list[dict[str, Any]]:
        """The first `count` frames of `op` from the server, waiting up to 5 s for them."""
        async with asyncio.timeout(5), self._arrived:
            await self._arrived.wait_for(lambda: sum(f["op"] == op for f in self.frames) >= count)
        return [f for f in self.frames if f["op"] == op][:count]

    async def read(self) -> None:
        assert self.socket is not None
        async for message in self.socket:
            async with self._arrived:
                self.frames.append(message.json())
                self._arrived.notify_all()

    async def attention(self, message_id: str, count: int = 3) -> dict[str, dict[str, Any]]:
        """The latest attention chips of a message once `count` agents have one."""

        def has(f: dict[str, Any]) -> bool:
            return f["op"] == "attention" and f["id"] == message_id and len(f["agents"]) >= count

        await self.frame(has)
        latest = [f for f in self.frames if has(f)][-1]
        return {chip["agent"]: chip for chip in latest["agents"]}


@asynccontextmanager
async def running(
    tmp: Path, workspace: Workspace | None = None, models: Models | None = None
) -> AsyncIterator[Chat]:
    """The chat started, with a socket opened as its page opens one: with the run's token,
    from the page's own origin. `models` says which model answers each agent."""
    chat = Chat(tmp, workspace, models)
    await chat.host.start()
    await chat.chat.start()
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(chat.chat.link("/ws"), origin=chat.chat.origin) as socket,
    ):
        chat.socket = socket
        reader = asyncio.create_task(chat.read())
        try:
            yield chat
        finally:
            reader.cancel()
            await chat.chat.close()
            await chat.host.close()


def run(
    tmp: Path, scenario: Callable[[Chat], Awaitable[None]], workspace: Workspace | None = None
) -> None:
    """Run `scenario` against a started chat (of `workspace`, else the shipped local one)."""

    async def main() -> None:
        async with running(tmp, workspace) as chat:
            await scenario(chat)

    asyncio.run(main())


def drawn(tmp: Path, browser: WebDriver, post: Post, read: str, what: str) -> Any:
    """Open the chat's page in `browser`, send `post` as its agent, and return what the script
    `read` returns of the page once it is truthy (`what` names it if it never is)."""

    async def main() -> Any:
        async with running(tmp) as chat:
            await asyncio.to_thread(browser.get, chat.chat.url)
            await chat.sender.send(post)
            shown = await asyncio.to_thread(wait, browser, what, lambda d: d.execute_script(read))
            return shown

    return asyncio.run(main())
