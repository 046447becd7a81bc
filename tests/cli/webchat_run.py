"""`c2a run` in-process with its web chat, and a socket opened as the page opens it: the shared
start and stop of the run tests that talk to the page."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp

from adapters.webchat.server import WebChat
from c2a.run import WorkspaceRun, run_workspaces

START_S = 15.0


@asynccontextmanager
async def webchat_run(
    manifest: Path,
    data_dir: Path,
    environ: Mapping[str, str] | None = None,
    reload: asyncio.Event | None = None,
) -> AsyncIterator[tuple[WorkspaceRun, WebChat, aiohttp.ClientWebSocketResponse]]:
    """Run `manifest` (the web chat on a free port; read again when `reload` is set) until the
    block ends, and open its websocket with the printed URL's token, from the page's origin."""
    stop = asyncio.Event()
    runs: list[WorkspaceRun] = []
    task = asyncio.create_task(
        run_workspaces(
            [manifest],
            stop=stop,
            environ=environ or {},
            data_dir=data_dir,
            started=runs.extend,
            webchat_port=0,
            reload=reload,
        )
    )
    try:
        async with asyncio.timeout(START_S):
            while not runs and not task.done():
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError("timed out waiting for the workspace to start") from None
    if not runs:
        await task  # raises what stopped the start
    chat = runs[0].connections["webchat"].chat
    assert chat is not None
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.ws_connect(chat.link("/ws"), origin=chat.origin) as socket,
        ):
            yield runs[0], chat, socket
    finally:
        stop.set()
        await task
