"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 that records what it gets.

    script = [completion(calls=[call("chat_claim", {"eventId": DM})]), completion("done")]
    async with FakeOpenAI(script) as server:
        loop = OpenAIModelLoop(server.base_url, "fake-model", tools)
        ...
    server.requests  # every request body, in order

Each request to `/v1/chat/completions` takes the next scripted `Reply`: a JSON body, or SSE
chunks when it was built by `streamed` (`pause` seconds apart, if given); `after` holds it
until an event is set, and `hang()` holds it until the client goes away, which is recorded in
`closed`. A request past the end of the script gets HTTP 500. `GET /v1/models` lists
`models`. Waits are bounded by `wait_timeout` and raise TimeoutError naming what did not
happen. The port is picked by the OS.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from aiohttp import web

__all__ = [
    "FakeOpenAI",
    "Reply",
    "call",
    "call_chunk",
    "completion",
    "hang",
    "streamed",
    "text_chunk",
]

Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted answer."""

    body: Json | None = None
    chunks: tuple[Json, ...] = ()
    stream: bool = False
    status: int = 200
    after: asyncio.Event | None = None
    hang: bool = False
    pause: float = 0.0
    raw: str | None = None  # the body as written, when it is no JSON a server would make


def call(name: str, arguments: Json | str, call_id: str = "call_1") -> Json:
    """A tool call as a server writes it; a string is sent as the arguments verbatim."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def completion(
    content: str | None = None, calls: Sequence[Json] = (), after: asyncio.Event | None = None
) -> Reply:
    """A non-streamed chat completion with `content` and/or tool `calls`."""
    message: Json = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = list(calls)
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "fake-model",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    return Reply(body=body, after=after)


def hang() -> Reply:
    """A request the server never answers; it records when the client goes away."""
    return Reply(hang=True)


def text_chunk(text: str) -> Json:
    return _chunk({"content": text})


def call_chunk(
    index: int, call_id: str | None = None, name: str | None = None, arguments: str = ""
) -> Json:
    """One piece of a streamed tool call: the first carries id and name, later ones only more
    of the arguments string."""
    piece: Json = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        piece |= {"id": call_id, "type": "function"}
        piece["function"]["name"] = name
    return _chunk({"tool_calls": [piece]})


def streamed(*chunks: Json, pause: float = 0.0) -> Reply:
    """A streamed completion: each chunk as one `data:` event, `pause` seconds after the one
    before, then `data: [DONE]`."""
    return Reply(chunks=chunks, stream=True, pause=pause)


def _chunk(delta: Json) -> Json:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
    }


class FakeOpenAI:
    """The server; `requests` holds every request body, `headers` their headers, `closed` the
    indexes of requests whose client went away before they were answered."""

    def __init__(
        self,
        script: Sequence[Reply],
        *,
        wait_timeout: float = 5.0,
        models: Sequence[str] = ("fake-model",),
    ) -> None:
        self.script = list(script)
        self.models = list(models)
        self.wait_timeout = wait_timeout
        self.requests: list[Json] = []
        self.headers: list[dict[str, str]] = []
        self.closed: list[int] = []
        self.port = 0
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        # Cancels a handler when its client disconnects, which is how `closed` is noticed.
        self._runner = web.AppRunner(
            app, access_log=None, shutdown_timeout=1.0, handler_cancellation=True
        )
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def wait_requests(self, count: int) -> None:
        await self._wait(f"{count} requests", lambda: len(self.requests) >= count)

    async def wait_closed(self, index: int) -> None:
        await self._wait(f"request {index} closed by the client", lambda: index in self.closed)

    async def _wait(self, what: str, done: Callable[[], bool]) -> None:
        try:
            async with asyncio.timeout(self.wait_timeout):
                while not done():
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            raise TimeoutError(f"the fake OpenAI server never saw {what}") from None

    async def _models(self, request: web.Request) -> web.Response:
        listed = [{"id": name, "object": "model", "owned_by": "fake"} for name in self.models]
        return web.json_response({"object": "list", "data": listed})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        index = len(self.requests)
        self.requests.append(await request.json())
        self.headers.append(dict(request.headers))
        self._changed.set()
        if index >= len(self.script):
            error = {"error": {"message": f"the script has {len(self.script)} replies"}}
            return web.json_response(error, status=500)
        reply = self.script[index]
        try:
            if reply.hang:
                await asyncio.get_running_loop().create_future()
            if reply.after is not None:
                await reply.after.wait()
        except asyncio.CancelledError:
            self.closed.append(index)
            self._changed.set()
            raise
        if reply.raw is not None:
            return web.Response(
                text=reply.raw, status=reply.status, content_type="application/json"
            )
        if not reply.stream:
            return web.json_response(reply.body, status=reply.status)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for number, chunk in enumerate(reply.chunks):
            if number and reply.pause:
                await asyncio.sleep(reply.pause)
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
