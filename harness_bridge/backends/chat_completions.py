"""The OpenAI chat-completions wire format, as the built-in model loop speaks it; pure, no I/O.

It owns the function-tool schemas offered to the model (with the fields that name events
constrained to the turn's real event ids), reading a reply (`choices[0].message`, or the
`choices[0].delta` chunks of a streamed reply assembled into one), and decoding a tool call's
arguments. Servers differ in small ways that are absorbed here: arguments arrive as a JSON string
(OpenAI, llama.cpp, vLLM, Ollama's `/v1`) or already as an object, a tool call may come without
an id, and a streamed tool call may arrive whole or in pieces. `ModelClient` is what every
client of the format offers the model loop: `ChatClient` over HTTP, `LocalModelClient` in process.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from core.errors import ModelError, ModelRefusedTurn

__all__ = [
    "EVENT_ID_FIELDS",
    "Messages",
    "ModelClient",
    "ModelError",
    "ModelReply",
    "OnText",
    "RawCall",
    "StreamAssembler",
    "Tools",
    "decode_arguments",
    "function_tools",
    "parse_completion",
]

# Argument fields that name an event, in the tools' wire spelling and their snake_case aliases
# (the chat tools accept both).
EVENT_ID_FIELDS: Final = frozenset({"inReplyTo", "in_reply_to", "eventId", "event_id"})
_SCHEMA_ID_FIELDS: Final = ("inReplyTo", "eventId")

Messages = Sequence[Mapping[str, Any]]
"""A conversation as the format sends it: `{"role": ..., "content": ...}` objects, in order."""

Tools = Sequence[Mapping[str, Any]]
"""The function tools offered with a request (`function_tools`)."""

OnText = Callable[[str], Awaitable[None]]
"""Given each piece of a streamed reply's text as it arrives."""


@dataclass(frozen=True, slots=True)
class RawCall:
    """One tool call as the model wrote it; `arguments` is undecoded (a string, or an object
    from servers that decode it themselves)."""

    id: str
    name: str
    arguments: Any


@dataclass(frozen=True, slots=True)
class ModelReply:
    """One model response: its text and the tool calls it asks for, in order."""

    content: str
    calls: tuple[RawCall, ...] = ()


class ModelClient(Protocol):
    """One model that answers a conversation with its function tools offered."""

    async def complete(
        self, messages: Messages, tools: Tools, on_text: OnText | None = None
    ) -> ModelReply:
        """The model's reply to `messages` with `tools` offered; text may also go to `on_text`
        as it is made. Raises ModelError; cancelling the call stops the model's work."""
        ...

    async def aclose(self) -> None:
        """Release what the client holds (connections, a loaded model); it may be used again."""
        ...


def function_tools(specs: Sequence[Mapping[str, Any]], event_ids: Sequence[str]) -> list[Any]:
    """The `tools` of a request: each chat tool spec (`name`, `description`, `inputSchema`) as
    an OpenAI function tool, with `inReplyTo` and `eventId` narrowed to an `enum` of
    `event_ids`, so grammar-constrained servers (llama.cpp, vLLM) cannot even write another id.
    The specs are not modified."""
    tools: list[Any] = []
    for spec in specs:
        parameters = copy.deepcopy(dict(spec["inputSchema"]))
        properties = parameters.get("properties", {})
        for name in _SCHEMA_ID_FIELDS:
            if name in properties:
                properties[name] = {
                    "type": "string",
                    "enum": list(event_ids),
                    "description": "the event_id of one of the events of this turn",
                }
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": spec["name"],
                    "description": spec.get("description", ""),
                    "parameters": parameters,
                },
            }
        )
    return tools


def decode_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as an object. Raises ValueError, with a message for the model,
    when they are not one JSON object; an empty string counts as `{}`."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if not isinstance(raw, str):
        raise ValueError("arguments must be one JSON object")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"arguments are not valid JSON ({exc.msg} at character {exc.pos})"
        ) from None
    except RecursionError:
        raise ValueError("arguments are nested too deeply to read") from None
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be one JSON object, not {type(value).__name__}")
    return value


def parse_completion(body: Any) -> ModelReply:
    """Read a (non-streamed) chat completion; raises ModelRefusedTurn when it has no
    message."""
    try:
        message = body["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise ModelRefusedTurn(
            "the model server's answer has no choices[0].message", {"body": _excerpt(body)}
        ) from None
    if not isinstance(message, Mapping):
        raise ModelRefusedTurn("choices[0].message is not an object", {"body": _excerpt(body)})
    calls = []
    for number, item in enumerate(_tool_calls(message, body)):
        call = item if isinstance(item, Mapping) else {}
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        calls.append(
            RawCall(
                id=str(call.get("id") or f"call_{number}"),
                name=str(function.get("name") or ""),
                arguments=function.get("arguments"),
            )
        )
    return ModelReply(str(message.get("content") or ""), tuple(calls))


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    whole: Any = None  # arguments a server sent as an object rather than string pieces


class StreamAssembler:
    """Builds one `ModelReply` from the chunks of a streamed completion (`stream: true`):
    content deltas are concatenated, tool-call deltas are joined by their `index`."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._calls: dict[int, _PartialCall] = {}

    def feed(self, chunk: Any) -> str:
        """Take one decoded `data:` chunk; returns the text it adds (may be empty). Raises
        ModelRefusedTurn for a chunk that is not a completion chunk."""
        if isinstance(chunk, Mapping) and "error" in chunk:
            raise ModelRefusedTurn("the model server reported an error mid-stream", {"body": chunk})
        choices = chunk.get("choices") if isinstance(chunk, Mapping) else None
        if not isinstance(choices, list):
            raise ModelRefusedTurn("a streamed chunk has no choices", {"body": _excerpt(chunk)})
        if not choices:  # usage-only chunks
            return ""
        delta = choices[0].get("delta") if isinstance(choices[0], Mapping) else None
        delta = delta if isinstance(delta, Mapping) else {}
        text = str(delta.get("content") or "")
        if text:
            self._content.append(text)
        for position, piece in enumerate(_tool_calls(delta, chunk)):
            if not isinstance(piece, Mapping):
                continue
            index = piece.get("index", position)
            if not isinstance(index, int):
                raise ModelRefusedTurn(
                    "a streamed tool call's index is not a number", {"body": _excerpt(chunk)}
                )
            partial = self._calls.setdefault(index, _PartialCall())
            partial.id = partial.id or str(piece.get("id") or "")
            function = piece.get("function")
            function = function if isinstance(function, Mapping) else {}
            partial.name += str(function.get("name") or "")
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                partial.arguments.append(arguments)
            elif arguments is not None:
                partial.whole = arguments
        return text

    def reply(self) -> ModelReply:
        calls = tuple(
            RawCall(
                id=partial.id or f"call_{index}",
                name=partial.name,
                arguments=partial.whole
                if partial.whole is not None
                else "".join(partial.arguments),
            )
            for index, partial in sorted(self._calls.items())
        )
        return ModelReply("".join(self._content), calls)


def _tool_calls(message: Mapping[str, Any], body: Any) -> list[Any]:
    """The `tool_calls` of a message or a delta (none when absent); ModelRefusedTurn when
    they are not a list."""
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ModelRefusedTurn("tool_calls is not a list", {"body": _excerpt(body)})
    return calls


def _excerpt(body: Any) -> str:
    return json.dumps(body, default=str)[:500]
