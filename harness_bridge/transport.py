"""JSON message transports: newline-delimited over asyncio streams (a subprocess's stdio, TCP),
one message per websocket text frame, and in memory.

A transport moves whole JSON objects. A line that is not a JSON object comes back as a
`BadLine` value carrying the reason, never as an exception, so a reader loop goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
import orjson
from aiohttp import web

__all__ = [
    "BadLine",
    "Closed",
    "MemoryTransport",
    "StreamTransport",
    "Transport",
    "WebSocketTransport",
    "decode_line",
]

MAX_LINE = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line that could not be read as a JSON object, and why."""

    text: str
    reason: str


class Closed(Exception):
    """The other side has gone: no more messages will arrive."""


class Transport(Protocol):
    """Carries JSON objects both ways. `receive` returns the next object or a `BadLine`, and
    raises `Closed` once the peer is gone; `send` raises `Closed` if it cannot be delivered."""

    async def send(self, message: dict[str, Any]) -> None: ...

    async def receive(self) -> dict[str, Any] | BadLine: ...

    async def close(self) -> None: ...


def decode_line(line: bytes) -> dict[str, Any] | BadLine:
    """One framed line as a JSON object, or a `BadLine` saying what is wrong with it."""
    text = line.decode("utf-8", errors="replace").strip()
    preview = text[:200]
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return BadLine(preview, f"not JSON ({exc.msg} at column {exc.colno})")
    if not isinstance(value, dict):
        return BadLine(preview, "a message must be a JSON object")
    return value


class StreamTransport:
    """JSON Lines over an asyncio reader and writer (a subprocess's stdio, or a socket)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        data = orjson.dumps(message) + b"\n"
        async with self._lock:
            if self._writer.is_closing():
                raise Closed("the stream is closed")
            try:
                self._writer.write(data)
                await self._writer.drain()
            except (ConnectionError, RuntimeError) as exc:
                raise Closed(str(exc)) from None

    async def receive(self) -> dict[str, Any] | BadLine:
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if not exc.partial.strip():
                    raise Closed("end of stream") from None
                line = exc.partial
            except asyncio.LimitOverrunError:
                await self._skip_long_line()
                return BadLine("", f"line longer than the {self._reader_limit()} byte limit")
            except ConnectionError as exc:
                raise Closed(str(exc)) from None
            if line.strip():
                return decode_line(line)

    async def close(self) -> None:
        if not self._writer.is_closing():
            self._writer.close()
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self._writer.wait_closed()

    async def _skip_long_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return

    def _reader_limit(self) -> int:
        return int(getattr(self._reader, "_limit", MAX_LINE))


class WebSocketTransport:
    """JSON messages over a websocket, one per text frame, so a harness can run on another
    machine. Works with either end of aiohttp's websockets (client or server response)."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse | web.WebSocketResponse) -> None:
        self._socket = socket

    async def send(self, message: dict[str, Any]) -> None:
        if self._socket.closed:
            raise Closed("the websocket is closed")
        try:
            await self._socket.send_str(orjson.dumps(message).decode())
        except (ConnectionError, RuntimeError) as exc:
            raise Closed(str(exc)) from None

    async def receive(self) -> dict[str, Any] | BadLine:
        while True:
            frame = await self._socket.receive()
            if frame.type is aiohttp.WSMsgType.TEXT:
                return decode_line(str(frame.data).encode())
            if frame.type is aiohttp.WSMsgType.BINARY:
                return BadLine("", "binary frames are not C2A messages")
            if frame.type in (
                aiohttp.WSMsgType.CLOSE,
                aiohttp.WSMsgType.CLOSING,
                aiohttp.WSMsgType.CLOSED,
                aiohttp.WSMsgType.ERROR,
            ):
                raise Closed("the websocket closed")

    async def close(self) -> None:
        await self._socket.close()


class MemoryTransport:
    """One end of an in-memory pair, for tests and in-process harnesses."""

    def __init__(
        self, inbox: asyncio.Queue[bytes | None], outbox: asyncio.Queue[bytes | None]
    ) -> None:
        self._inbox = inbox
        self._outbox = outbox
        self._closed = False

    @classmethod
    def pair(cls) -> tuple[MemoryTransport, MemoryTransport]:
        """Two connected ends: what one sends, the other receives."""
        a: asyncio.Queue[bytes | None] = asyncio.Queue()
        b: asyncio.Queue[bytes | None] = asyncio.Queue()
        return cls(a, b), cls(b, a)

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_raw(orjson.dumps(message))

    async def send_raw(self, line: bytes) -> None:
        """Send one line as it is, well-formed or not (tests use it to send bad lines)."""
        if self._closed:
            raise Closed("this end is closed")
        await self._outbox.put(line)

    async def receive(self) -> dict[str, Any] | BadLine:
        if self._closed:
            raise Closed("this end is closed")
        line = await self._inbox.get()
        if line is None:
            self._closed = True
            raise Closed("the other end closed")
        return decode_line(line)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._outbox.put(None)
