"""One JSON-RPC 2.0 peer over a transport: requests with ids and timeouts, notifications,
handlers for what the other side calls, and a reader loop that no bad line can stop.

The same class serves both ends of the C2A link: the host calls `chat/deliver` on the harness,
the harness calls `tools/call` on the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from core.errors import C2AError
from harness_bridge.transport import BadLine, Closed, Transport

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Connection",
    "RpcError",
]

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

Params = dict[str, Any] | None
Handler = Callable[[Params], Awaitable[Any]]


class RpcError(C2AError):
    """A JSON-RPC error: raised by a handler to answer with it, or by `request` on receipt."""

    code = "rpc_error"

    def __init__(self, rpc_code: int, message: str, data: Any = None) -> None:
        super().__init__(
            message, {"rpcCode": rpc_code} if data is None else {"rpcCode": rpc_code, "data": data}
        )
        self.rpc_code = rpc_code
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.rpc_code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class Connection:
    """A JSON-RPC peer. Register handlers, `start()`, then `request`/`notify`; `close()` ends it.

    Bad input never ends the reader loop: a line that is not JSON, or not a JSON-RPC message,
    is kept in `bad_lines` with its reason, logged, and answered with a parse or
    invalid-request error where JSON-RPC says to.
    """

    def __init__(self, transport: Transport, *, name: str = "peer", id_prefix: str = "") -> None:
        self.transport = transport
        self.name = name
        self.bad_lines: list[BadLine] = []
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
        if self.closed.is_set():
            raise Closed(f"connection to {self.name} is closed")
        rid = request_id if request_id is not None else f"{self._prefix}{next(self._ids)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self.transport.send(message)
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(rid, None)

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
                    self._bad(message)
                    await self._answer_error(None, PARSE_ERROR, f"parse error: {message.reason}")
                    continue
                await self._dispatch(message)
        except Closed:
            pass
        finally:
            self._fail_pending()

    async def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        rid = message.get("id")
        if message.get("jsonrpc") != "2.0":
            self._bad(BadLine(str(message)[:200], 'jsonrpc must be "2.0"'))
            await self._answer_error(rid, INVALID_REQUEST, 'jsonrpc must be "2.0"')
        elif isinstance(method, str):
            params = message.get("params")
            if params is not None and not isinstance(params, dict):
                await self._answer_error(rid, INVALID_PARAMS, "params must be an object")
            elif "id" in message:
                self._spawn(self._answer(rid, method, params))
            else:
                self._spawn(self._notified(method, params))
        elif "result" in message or "error" in message:
            self._resolve(rid, message)
        else:
            self._bad(
                BadLine(str(message)[:200], "neither a request, a notification nor a response")
            )
            await self._answer_error(rid, INVALID_REQUEST, "not a JSON-RPC message")

    def _resolve(self, rid: Any, message: dict[str, Any]) -> None:
        future = self._pending.get(rid) if isinstance(rid, str | int) else None
        if future is None or future.done():
            self._bad(BadLine(str(message)[:200], f"response to unknown request id {rid!r}"))
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(
                RpcError(
                    int(error.get("code", INTERNAL_ERROR)),
                    str(error.get("message", "error")),
                    error.get("data"),
                )
            )
        else:
            future.set_result(message.get("result"))

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
        except Exception:
            log.exception("handler for %s failed", method)
            await self._answer_error(rid, INTERNAL_ERROR, f"internal error in {method}")
            return
        await self._send_quietly({"jsonrpc": "2.0", "id": rid, "result": result})

    async def _notified(self, method: str, params: Params) -> None:
        handler = self._notifications.get(method)
        if handler is None:
            return
        try:
            await handler(params)
        except Exception:
            log.exception("notification handler for %s failed", method)

    async def _answer_error(self, rid: Any, code: int, message: str) -> None:
        error = {"code": code, "message": message}
        await self._send_quietly({"jsonrpc": "2.0", "id": rid, "error": error})

    async def _send_quietly(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(Closed):
            await self.transport.send(message)

    def _bad(self, line: BadLine) -> None:
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
