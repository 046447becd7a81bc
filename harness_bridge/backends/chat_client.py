"""One HTTP client for an OpenAI-compatible `/chat/completions` endpoint, over aiohttp.

It sends a conversation with its function tools and returns the model's reply, reading a
streamed reply (server-sent events) when asked and handing its text to a callback as it comes.
For the text reply path it also asks for a plain answer, always streamed (`stream_text`), and
for one of a few fixed answers, constrained by a JSON schema the server enforces (`choose`).
Everything that can go wrong on the wire (refused connection, timeout, HTTP error, a body that
is not a completion, or one over `MAX_ANSWER_BYTES`) is raised as `ModelError`. Cancelling a
call closes its connection rather than draining it, so a held or streaming request stops at
once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

import aiohttp
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong

from core.errors import ModelError, ModelRefusedTurn
from harness_bridge.backends.chat_completions import (
    Messages,
    ModelReply,
    OnText,
    StreamAssembler,
    Tools,
    parse_completion,
)

__all__ = ["ChatClient"]

MAX_ANSWER_BYTES: Final = 8 << 20
"""The most a model server's answer may be, streamed or not (a long answer is tens of KB): one
that writes on, a runaway or a hostile one, would fill the host's memory until the timeout."""

_REFUSED: Final = frozenset({400, 413, 422})
"""The HTTP statuses that refuse one request (`ModelRefusedTurn`); any other error, 401, 404,
429 and 5xx included, says the server is not there for anyone (`ModelError`)."""


class ChatClient:
    """Requests to one model on one server; `aclose` closes its connections.

    `base_url` is the API root that `/chat/completions` is appended to (for example
    `http://127.0.0.1:8080/v1`); `api_key_env` names the environment variable holding a bearer
    key, read once, here (raises ModelError when it is unset or empty); `timeout` bounds each
    request in seconds; `options` are extra request fields (`temperature`, `max_tokens`, ...).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        timeout: float = 120.0,
        options: Mapping[str, Any] | None = None,
        stream: bool = False,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self.options = dict(options or {})
        self.stream = stream
        self._headers: dict[str, str] = {}
        if api_key_env is not None:
            key = os.environ.get(api_key_env)
            if not key:
                raise ModelError(f"the API key variable {api_key_env} is not set or empty")
            self._headers["Authorization"] = f"Bearer {key}"
        self._http: aiohttp.ClientSession | None = None

    async def aclose(self) -> None:
        """Close the connections; a later request opens new ones."""
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def complete(
        self, messages: Messages, tools: Tools, on_text: OnText | None = None
    ) -> ModelReply:
        """The model's reply to `messages` with `tools` offered; when streaming, each piece of
        text also goes to `on_text` as it arrives. Raises ModelError."""
        body: dict[str, Any] = {
            **self.options,
            "model": self.model,
            "messages": list(messages),
            "tools": list(tools),
        }
        return await self._post(body, on_text, stream=self.stream)

    async def stream_text(self, messages: Messages, on_text: OnText, *, max_tokens: int) -> str:
        """The model's plain answer (no tools offered), streamed: each piece goes to `on_text`
        as it arrives. Raises ModelError."""
        body = {
            "max_tokens": max_tokens,
            **self.options,
            "model": self.model,
            "messages": list(messages),
        }
        return (await self._post(body, on_text, stream=True)).content

    async def choose(self, messages: Messages, options: Sequence[str]) -> str:
        """One of `options`: the server is held to a JSON schema whose only values they are
        (`response_format`, which llama.cpp's server, vLLM and Ollama enforce). An answer
        outside them (a server that ignored the schema) counts as the last option. Raises
        ModelError."""
        schema = {
            "type": "object",
            "properties": {"answer": {"type": "string", "enum": list(options)}},
            "required": ["answer"],
        }
        body = {
            **self.options,
            "model": self.model,
            "messages": list(messages),
            "max_tokens": 16,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "choice", "strict": True, "schema": schema},
            },
        }
        reply = await self._post(body, None, stream=False)
        try:
            chosen = json.loads(reply.content).get("answer")
        except (json.JSONDecodeError, RecursionError, AttributeError):
            chosen = None
        return chosen if chosen in options else options[-1]

    async def _post(
        self,
        body: dict[str, Any],
        on_text: OnText | None,
        *,
        stream: bool,
    ) -> ModelReply:
        if stream:
            body["stream"] = True
        if self._http is None:
            self._http = aiohttp.ClientSession(timeout=self.timeout)
        try:
            async with self._http.post(self.url, json=body, headers=self._headers) as response:
                if response.status >= 400:
                    text = (await _read_up_to(response, 500)).decode("utf-8", "replace")
                    # The request itself refused (too long, malformed): not the server down.
                    error = ModelRefusedTurn if response.status in _REFUSED else ModelError
                    raise error(
                        f"the model server answered HTTP {response.status}: {text}",
                        {"status": response.status, "url": self.url},
                    )
                if not stream:
                    return parse_completion(json.loads(await _read_whole(response)))
                return await _read_stream(response, on_text)
        except (json.JSONDecodeError, RecursionError, UnicodeDecodeError, LineTooLong) as exc:
            raise ModelRefusedTurn(
                f"the model server at {self.url} answered what is not a completion: {exc}",
                {"url": self.url},
            ) from exc
        except (aiohttp.ClientError, HttpProcessingError, TimeoutError) as exc:
            raise ModelError(
                f"the model server at {self.url} failed: {_why(exc, self.timeout.total)}",
                {"url": self.url},
            ) from exc


def _why(exc: Exception, timeout: float | None) -> str:
    """What went wrong, for a log line: a timeout's own text is empty."""
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout:g} s" if timeout else "timed out"
    return str(exc) or type(exc).__name__


async def _read_up_to(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """At most `limit` bytes of the body, and no more read from the wire."""
    body = bytearray()
    async for chunk in response.content.iter_chunked(1 << 16):
        body += chunk
        if len(body) >= limit:
            break
    return bytes(body[:limit])


async def _read_whole(response: aiohttp.ClientResponse) -> bytes:
    """The whole body of an answer, refused past `MAX_ANSWER_BYTES`."""
    body = await _read_up_to(response, MAX_ANSWER_BYTES + 1)
    if len(body) > MAX_ANSWER_BYTES:
        raise _too_long()
    return body


def _too_long() -> ModelRefusedTurn:
    return ModelRefusedTurn(f"the model server's answer is over {MAX_ANSWER_BYTES:,} bytes")


async def _read_stream(response: aiohttp.ClientResponse, on_text: OnText | None) -> ModelReply:
    """Server-sent events: `data: <chunk>` lines until `data: [DONE]` or the end, refused past
    `MAX_ANSWER_BYTES` in all (a line longer than aiohttp's buffer is `LineTooLong`)."""
    assembler = StreamAssembler()
    read = 0
    async for raw in response.content:
        read += len(raw)
        if read > MAX_ANSWER_BYTES:
            raise _too_long()
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line.removeprefix("data:").strip()
        if data == "[DONE]":
            break
        text = assembler.feed(json.loads(data))
        if text and on_text is not None:
            await on_text(text)
    return assembler.reply()
