"""JSON-RPC message transports: newline-delimited over asyncio streams (a subprocess's stdio, a
socket), one message per websocket text frame, and in memory.

A transport sends JSON objects and receives typed messages through the one parse path,
`harness_bridge.jsonrpc.parse_line`: anything else comes back as a `BadLine` value carrying the
reason, never as an exception, so a reader loop goes on. A line longer than `MAX_LINE` is read
to its end, dropped and reported as a `BadLine`.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Any, Protocol

import aiohttp
from aiohttp import web

from harness_bridge.jsonrpc import BadLine, Message, encode_message, parse_line

__all__ = [
    "MAX_LINE",
    "BadLine",
    "Closed",
    "MemoryTransport",
    "StreamTransport",
    "Transport",
    "WebSocketTransport",
    "read_line",
    "stdio_transport",
]

MAX_LINE = 4 * 1024 * 1024
"""The longest line a stream transport reads, in bytes; give every StreamReader this limit."""


class Closed(Exception):
    """The other side has gone: no more messages will arrive."""


class Transport(Protocol):
    """Carries JSON-RPC messages both ways. `receive` returns the next message or a `BadLine`,
    and raises `Closed` once the peer is gone; `send` raises `Closed` if it cannot be delivered
    (and `harness_bridge.jsonrpc.ProtocolError` if the message cannot be encoded)."""

    async def send(self, message: dict[str, Any]) -> None: ...

    async def receive(self) -> Message | BadLine: ...

    async def close(self) -> None: ...


async def read_line(reader: asyncio.StreamReader, limit: int = MAX_LINE) -> tuple[bytes, bool]:
    """The next line without its newline, and whether it was longer than `limit` bytes: then
    only its first `limit` bytes are returned and the rest is read and dropped, so memory stays
    bounded whatever the reader's own limit. A last line without a newline counts; raises
    `Closed` at the end of the stream and when the connection fails."""
    kept = bytearray()
    cut = False
    while True:
        try:
            chunk = await reader.readuntil(b"\n")
            done = True
        except asyncio.LimitOverrunError as exc:
            chunk, done = await reader.readexactly(exc.consumed), False
        except asyncio.IncompleteReadError as exc:
            if not exc.partial and not kept and not cut:
                raise Closed("end of stream") from None
            chunk, done = exc.partial, True
        except ConnectionError as exc:
            raise Closed(str(exc)) from None
        if not cut:
            kept += chunk
            if len(kept.rstrip(b"\r\n")) > limit:
                del kept[limit:]
                cut = True
        if done:
            return bytes(kept.rstrip(b"\r\n")), cut


async def stdio_transport() -> StreamTransport:
    """This process's stdin and stdout as a transport: a harness's end of the stdio link."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    return StreamTransport(reader, writer)


class StreamTransport:
    """JSON Lines over an asyncio reader and writer (a subprocess's stdio, or a socket)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        data = encode_message(message) + b"\n"
        async with self._lock:
            if self._writer.is_closing():
                raise Closed("the stream is closed")
            try:
                self._writer.write(data)
                await self._writer.drain()
            except (ConnectionError, RuntimeError) as exc:
                raise Closed(str(exc)) from None

    async def receive(self) -> Message | BadLine:
        while True:
            line, cut = await read_line(self._reader)
            if cut:
                preview = line[:200].decode("utf-8", errors="replace")
                return BadLine(preview, f"line longer than the {MAX_LINE}-byte limit")
            if line.strip():
                return parse_line(line)

    async def close(self) -> None:
        if not self._writer.is_closing():
            self._writer.close()
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self._writer.wait_closed()


class WebSocketTransport:
    """JSON messages over a websocket, one per text frame, so a harness can run on another
    machine. Works with either end of aiohttp's websockets (client or server response)."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse | web.WebSocketResponse) -> None:
        self._socket = socket

    async def send(self, message: dict[str, Any]) -> None:
        if self._socket.closed:
            raise Closed("the websocket is closed")
        try:
            await self._socket.send_str(encode_message(message).decode())
        except (ConnectionError, RuntimeError) as exc:
            raise Closed(str(exc)) from None

    async def receive(self) -> Message | BadLine:
        while True:
            frame = await self._socket.receive()
            if frame.type is aiohttp.WSMsgType.TEXT:
                return parse_line(str(frame.data).encode())
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
        await self.send_raw(encode_message(message))

    async def send_raw(self, line: bytes) -> None:
        """Send one line as it is, well-formed or not (tests use it to send bad lines)."""
        if self._closed:
            raise Closed("this end is closed")
        await self._outbox.put(line)

    async def receive(self) -> Message | BadLine:
        if self._closed:
            raise Closed("this end is closed")
        line = await self._inbox.get()
        if line is None:
            self._closed = True
            raise Closed("the other end closed")
        return parse_line(line)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._outbox.put(None)
