"""Fuzz the web chat's door: hostile Host, Origin, Cookie and token values, read alone and sent
to the real server over a raw socket.

Alone, the checks let only `AccessRefused` escape; the manifest's `webchat.allowed_origins`
only `ManifestError`. Against the real aiohttp server on 127.0.0.1, a request without the run's
token is answered 400 (aiohttp's parser) or 403, never served, and the server keeps answering.
Every call finishes within the bound.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from bounds import timed
from builders import local_workspace
from hypothesis import given
from hypothesis import strategies as st

from adapters.webchat.access import Access, RequestHost
from adapters.webchat.manifest import WebchatWorkspace
from adapters.webchat.server import WebChat
from c2a.host import Host
from c2a.platforms import installed
from core.clock import SystemClock
from core.emission import Emission
from core.errors import AccessRefused, ManifestError
from core.manifest import parse_manifest
from core.sqlite_store import SQLiteStore

TOKEN = "k" * 43
# Any text at all, lone surrogates included (a header a parser decoded leniently).
anything = st.text(st.characters(exclude_categories=()), max_size=300)
# What can be written on one header line.
header_text = st.text(st.characters(exclude_characters="\r\n", exclude_categories=("Cs",)))
near_hosts = st.sampled_from(
    ["127.0.0.1", "localhost", "[::1]", "127.0.0.1:8765", "[::1]:1", "evil.example:8765", ""]
)


def test_the_checks_refuse_with_their_own_error() -> None:
    access = Access(TOKEN, WebchatWorkspace(host="0.0.0.0", allowed_origins=["https://t.example"]))
    served = RequestHost("127.0.0.1", 8765)

    @given(st.one_of(anything, near_hosts), anything, anything)
    def check(host: str, origin: str, token: str) -> None:
        for call in (
            lambda: access.host(host),
            lambda: access.origin(origin, "http", served),
            lambda: access.admit(token, host),
        ):
            with contextlib.suppress(AccessRefused):
                timed("an access check", call)

    check()


def test_allowed_origins_are_origins_or_a_manifest_error() -> None:
    @given(
        st.one_of(
            anything, st.builds("{}://{}".format, st.sampled_from(["http", "https"]), anything)
        )
    )
    def check(origin: str) -> None:
        data = {"version": 1, "workspace": "w", "agents": {"a": {}}}
        try:
            manifest = timed(
                "reading allowed_origins",
                lambda: parse_manifest(
                    {**data, "webchat": {"allowed_origins": [origin]}}, platforms=installed()
                ),
            )
        except ManifestError:
            return
        assert manifest.webchat is not None
        [canonical] = manifest.webchat.allowed_origins
        assert WebchatWorkspace(allowed_origins=[canonical]).allowed_origins == [canonical]

    check()


# ---- the real server ----------------------------------------------------------------------------


class Door:
    """The web chat served on 127.0.0.1 by an event loop of its own, run only while asked."""

    def __init__(self, tmp: Path) -> None:
        self.loop = asyncio.new_event_loop()
        workspace = local_workspace()
        self.store = SQLiteStore(str(tmp / "ledger.sqlite3"))
        self.host = Host(workspace, self.store, SystemClock(), self._sink)
        self.chat = WebChat(
            workspace,
            self.host.receive,
            self.store,
            SystemClock(),
            history=tmp / "webchat.jsonl",
            port=0,
            token=TOKEN,
        )

    async def _sink(self, emissions: list[Emission]) -> None:
        pass

    async def start(self) -> None:
        await self.host.start()
        await self.chat.start()

    async def close(self) -> None:
        await self.chat.close()
        await self.host.close()

    async def ask(self, target: str, headers: dict[str, str]) -> int:
        """The status of one raw GET; the connection is closed after it."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.chat.port)
        try:
            headers = {"Connection": "close", **headers}
            lines = [f"GET {target} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items())]
            writer.write("\r\n".join([*lines, "", ""]).encode())
            await writer.drain()
            status = await reader.readline()
            return int(status.split()[1])
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def status(self, target: str, headers: dict[str, str]) -> int:
        return timed("a request", lambda: self.loop.run_until_complete(self.ask(target, headers)))


@pytest.fixture(scope="module")
def door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    door = Door(tmp_path_factory.mktemp("door"))
    door.loop.run_until_complete(door.start())
    try:
        yield door
    finally:
        door.loop.run_until_complete(door.close())
        door.loop.close()


def test_no_request_without_the_token_is_served(door: Door) -> None:
    @given(
        path=st.sampled_from(["/", "/ws", "/page.js", "/nowhere"]),
        token=st.none() | header_text,
        host=st.one_of(near_hosts, header_text),
        origin=st.none() | header_text,
        cookie=st.none() | header_text,
        upgrade=st.booleans(),
    )
    def check(
        path: str,
        token: str | None,
        host: str,
        origin: str | None,
        cookie: str | None,
        upgrade: bool,
    ) -> None:
        target = path if token is None else f"{path}?token={quote(token, safe='')}"
        headers = {"Host": host}
        if origin is not None:
            headers["Origin"] = origin
        if cookie is not None:
            headers["Cookie"] = f"c2a-webchat-{door.chat.port}={cookie}"
        if upgrade:
            headers |= {
                "Upgrade": "websocket",
                "Connection": "Upgrade",
                "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            }
        assert door.status(target, headers) in (400, 403)

    check()
    welcome = {"Host": f"127.0.0.1:{door.chat.port}"}
    assert door.status(f"/page.js?token={TOKEN}", welcome) == 200
