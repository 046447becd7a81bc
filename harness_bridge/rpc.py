"""One JSON-RPC 2.0 peer over a transport: requests with ids and timeouts, notifications,
handlers for what the other side calls, and a reader loop that nothing the peer sends can stop.

The same class serves both ends of the C2A link: the host calls `chat/deliver` on the harness,
the harness calls `tools/call` on the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from core.errors import LinkError
from core.postgres.outage import during_outage
from harness_bridge.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    BadLine,
    JsonRpcError,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    ProtocolError,
)
from harness_bridge.transport import Closed, Transport

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SERVER_BUSY",
    "Connection",
    "MalformedResponse",
    "RpcError",
]

log = logging.getLogger(__name__)

BAD_LINES_KEPT = 100  # the most recent bad lines kept for inspection; a flood cannot grow it
# Requests and notifications from the peer being handled at once. A peer that sends more is
# answered "busy" (requests) or dropped with a bad line (notifications), so a flood of valid
# calls cannot grow the host's tasks without end; the reader never waits, so no deadlock.
MAX_IN_FLIGHT = 64
SERVER_BUSY = -32000  # JSON-RPC's range for implementation-defined server errors

Params = dict[str, Any] | None
Handler = Callable[[Params], Awaitable[Any]]


class RpcError(LinkError):
    """A JSON-RPC error: raised by a handler to answer with it, or by `request` on receipt."""

    code = "rpc_error"

    def __init__(self, rpc_code: int, message: str, data: Any = None) -> None:
        super().__init__(
            message, {"rpcCode": rpc_code} if data is None else {"rpcCode": rpc_code, "data": data}
        )
        self.rpc_code = rpc_code
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        return JsonRpcError(code=self.rpc_code, message=self.message, data=self.data).to_wire()


class MalformedResponse(RpcError):
    """The peer answered a request with something that is not a JSON-RPC response; `request`
    raises it so the call fails at once instead of waiting for its timeout."""

    code = "malformed_response"


class Connection:
    """A JSON-RPC peer. Register handlers, `start()`, then `request`/`notify`; `close()` ends it.

    Nothing the peer sends ends the reader loop: a line that is not JSON, or not a JSON-RPC
    message, is kept in `bad_lines` (the most recent ones) with its reason, logged, and
    answered with the error JSON-RPC calls for (parse error, invalid request, invalid params);
    a malformed response is never answered, and fails the call its id names.
    """

    def __init__(self, transport: Transport, *, name: str = "peer", id_prefix: str = "") -> None:
        self.transport = transport
        self.name = name
        self.bad_lines: deque[BadLine] = deque(maxlen=BAD_LINES_KEPT)
        self._ids = itertools.count(1)
        self._prefix = id_prefix
        self._pending: dict[str | int, asyncio.Future[Any]] = {}
        self._requests: dict[str, Handler] = {}
        self._notifications: dict[str, Handler] = {}
        self._reader: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = asyncio.Event()

    def on_request(self, method: str, handler: Handler) -> None:
        """Answer requests for `method` with what `handler` returns (or the RpcError it raises)."""
        self._requests[method] = handler

    def on_notification(self, method: str, handler: Handler) -> None:
        self._notifications[method] = handler

    def start(self) -> None:
        """Start reading; call once, after registering handlers."""
        if self._reader is None:
            self._reader = asyncio.create_task(self._read_loop(), name=f"rpc-reader-{self.name}")

    async def request(
        self,
        method: str,
        params: Params = None,
        *,
        timeout: float = 30.0,
        request_id: str | int | None = None,
    ) -> Any:
        """Send a request and wait for its result; raises RpcError for an error response,
        TimeoutError when no answer comes in time, and Closed when the peer goes away."""
        answer = await self.send_request(method, params, request_id=request_id)
        return await asyncio.wait_for(answer, timeout)

    async def send_request(
        self, method: str, params: Params = None, *, request_id: str | int | None = None
    ) -> asyncio.Future[Any]:
        """Send a request and return, once it is written, the future of its answer (what
        `request` waits for), so several requests can be in flight in the order they were
        written. Raises Closed when the peer is gone; cancelling the future forgets the id."""
        if self.closed.is_set():
            raise Closed(f"connection to {self.name} is closed")
        rid = request_id if request_id is not None else f"{self._prefix}{next(self._ids)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        future.add_done_callback(lambda done: self._forget(rid, done))
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self.transport.send(message)
        except BaseException:
            future.cancel()
            raise
        return future

    def _forget(self, rid: str | int, future: asyncio.Future[Any]) -> None:
        if self._pending.get(rid) is future:
            del self._pending[rid]

    async def notify(self, method: str, params: Params = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.transport.send(message)

    async def close(self) -> None:
        """Stop reading, fail what is still waiting, and close the transport."""
        await self.transport.close()
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._fail_pending()

    # ---- reading -----------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        try:
            while True:
                message = await self.transport.receive()
                if isinstance(message, BadLine):
                    await self._bad(message)
                elif isinstance(message, JsonRpcResponse):
                    self._resolve(message)
                elif len(self._tasks) >= MAX_IN_FLIGHT:
                    await self._busy(message)
                elif isinstance(message, JsonRpcRequest):
                    self._spawn(self._answer(message.id, message.method, message.params))
                else:
                    self._spawn(self._notified(message.method, message.params))
        except Closed:
            pass
        finally:
            self._fail_pending()

    def _resolve(self, response: JsonRpcResponse) -> None:
        future = self._pending.get(response.id) if response.id is not None else None
        if future is None or future.done():
            self._record(BadLine("", f"response to unknown request id {_short(response.id)}"))
            return
        if response.error is None:
            future.set_result(response.result)
        else:
            error = response.error
            future.set_exception(RpcError(error.code, error.message, error.data))

    async def _answer(self, rid: Any, method: str, params: Params) -> None:
        handler = self._requests.get(method)
        if handler is None:
            await self._answer_error(rid, METHOD_NOT_FOUND, f"method not found: {method}")
            return
        try:
            result = await handler(params)
        except RpcError as exc:
            await self._send_quietly({"jsonrpc": "2.0", "id": rid, "error": exc.to_wire()})
            return
        except Exception as exc:
            if during_outage(exc):  # the store said so once; the caller may try again
                log.debug("handler for %s failed: %s", method, exc)
            else:
                log.exception("handler for %s failed", method)
            await self._answer_error(rid, INTERNAL_ERROR, f"internal error in {method}")
            return
        try:
            await self._send_quietly({"jsonrpc": "2.0", "id": rid, "result": result})
        except ProtocolError as exc:
            log.error("the result of %s cannot be sent: %s", method, exc)
            await self._answer_error(rid, INTERNAL_ERROR, f"the result of {method} cannot be sent")

    async def _notified(self, method: str, params: Params) -> None:
        handler = self._notifications.get(method)
        if handler is None:
            return
        try:
            await handler(params)
        except Exception:
            log.exception("notification handler for %s failed", method)

    async def _busy(self, message: JsonRpcRequest | JsonRpcNotification) -> None:
        """A call beyond `MAX_IN_FLIGHT`: a request is answered busy, a notification dropped."""
        reason = f"{MAX_IN_FLIGHT} calls already in flight: {_short(message.method)} refused"
        self._record(BadLine("", reason))
        if isinstance(message, JsonRpcRequest):
            await self._answer_error(message.id, SERVER_BUSY, f"busy: {reason}, retry later")

    async def _answer_error(self, rid: Any, code: int, message: str) -> None:
        error = {"code": code, "message": message}
        await self._send_quietly({"jsonrpc": "2.0", "id": rid, "error": error})

    async def _send_quietly(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(Closed):
            await self.transport.send(message)

    async def _bad(self, line: BadLine) -> None:
        """Record a bad line; answer it when JSON-RPC says to, else fail the call it names."""
        self._record(line)
        if line.answer:
            await self._answer_error(line.id, line.code, line.reason)
            return
        future = self._pending.get(line.id) if line.id is not None else None
        if future is not None and not future.done():
            future.set_exception(
                MalformedResponse(
                    INVALID_REQUEST,
                    f"{self.name} answered request {_short(line.id)} with a {line.reason}",
                )
            )

    def _record(self, line: BadLine) -> None:
        self.bad_lines.append(line)
        log.warning("bad line from %s: %s", self.name, line.reason)

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _fail_pending(self) -> None:
        self.closed.set()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(Closed(f"connection to {self.name} closed"))


def _short(value: object) -> str:
    """A peer's id as it may appear in a log line: repr, at most 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."
