"""The `openai` backend: the built-in model loop, one agent's turns run against any
OpenAI-compatible `/v1/chat/completions` server (llama.cpp server, vLLM, LM Studio, Ollama's
`/v1`) over aiohttp, with the chat tools as function tools.

A session is one agent in one conversation (a DM or channel; threads share their channel's
session, so the model keeps the channel's context). Its first request carries the standing
`C2A RESPONSE RULES` as the system message; every turn adds the rendered events as a user
message, and the model's tool calls run through a `ToolCaller` (the host's `ChatTools`
in-process, or anything else) with their results fed back as `role: tool` messages until the
model stops calling tools. The model's last text, the reply that called no tool, is the
turn's `TurnResult.text`: the in-process harness posts it as the reply when the turn still owes
one (`harness_bridge.runtime`). A session's history is kept only when a turn completes: a failed or
cancelled turn leaves the session exactly as it was before the turn (a first turn leaves none).
What is kept is bounded (`trimmed`, `KEPT_CHARS`; `SESSIONS_KEPT` sessions, the most lately used):
a conversation of months neither grows the host's memory nor overflows the model's context.

Small models get help. `inReplyTo` and `eventId` are offered as an `enum` of the turn's event
ids, and a call naming any other id is answered with a tool error listing the valid ones. A
malformed call (arguments that are not one JSON object, an unknown tool, an unknown event id)
is answered with an error saying what is wrong, and the model tries again: the first try and
`malformed_retries` (3, A2ACP's rule) retries; one more malformed response in a row ends the
turn `failed` with the reason. A tool's own refusal (a `ToolError`, such as replying to a
`must_not_respond` event) is a normal answer, fed back and never counted as malformed;
`max_tool_rounds` bounds those. At most `MAX_CALLS_PER_REPLY` (16) calls of one reply run.
`record_failure` writes the `failed` disposition.

Events that arrive for a conversation whose turn is running are given to `inject` and shown
to the model before its next call, as one more user message. Cancelling the task that runs a
turn aborts the HTTP request in flight (the connection is closed, not drained).

Ollama's native `/api/chat` is not spoken, because `/v1` is enough: Ollama serves
`/v1/chat/completions` with the same `tools`, `tool_calls` and `role: tool` results as every
other server here, so `base_url: http://localhost:11434/v1` reaches any Ollama model that
supports tools. The native API differs only in ways this loop does not need (arguments as
objects, which `decode_arguments` accepts anyway; `tool_name` in results; NDJSON streaming).
The one thing `/v1` cannot set per request is the context length: set `num_ctx` in the model's
Modelfile or `OLLAMA_CONTEXT_LENGTH` on the server.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final, Literal, Protocol, Self

from core.agent_port import AgentPort
from harness_bridge.backends.chat_client import ChatClient
from harness_bridge.backends.chat_completions import (
    EVENT_ID_FIELDS,
    ModelClient,
    ModelError,
    ModelReply,
    RawCall,
    decode_arguments,
    function_tools,
)
from harness_bridge.prompt import RESPONSE_RULES, render_turn
from harness_bridge.tools import ChatTools, ToolError
from harness_bridge.turns import Turn
from harness_bridge.wire import parse_deliver

__all__ = [
    "MAX_CALLS_PER_REPLY",
    "ModelError",
    "OpenAIModelLoop",
    "Progress",
    "ToolCaller",
    "TurnResult",
    "record_failure",
    "session_of",
    "trimmed",
]

MAX_CALLS_PER_REPLY: Final = 16
"""The most tool calls of one model reply that run. A small model can repeat a call until its
tokens run out, and a hostile server can write thousands; each would run and its result be fed
back in the next request. The rest are left out of the session, the model told, and the reply
counted as malformed (so a runaway ends the turn as malformed calls do)."""

KEPT_CHARS: Final = 24_000
"""How much of its earlier turns a session carries into the next (about 6,000 tokens): the
newest whole turns that fit. A server that truncates a long prompt silently (Ollama past its
`num_ctx`) would otherwise cut the system rules first; what is older is in the ledger, for
`chat_read`."""
SESSIONS_KEPT: Final = 256
"""Conversations whose history is kept, the most lately used; another starts afresh."""

Message = dict[str, Any]


def trimmed(messages: list[Message], most: int = KEPT_CHARS) -> list[Message]:
    """The system message and the newest stretch of the rest that fits in `most` characters
    (as JSON) and begins at a user message (a turn's events, or events shown during one):
    every tool result follows its call inside such a stretch, so none is cut from its call."""
    system, rest = messages[0], messages[1:]
    size, start = 0, len(rest)
    for index in range(len(rest) - 1, -1, -1):
        size += len(json.dumps(rest[index]))
        if size > most:
            break
        if rest[index]["role"] == "user":
            start = index
    return [system, *rest[start:]]


class ToolCaller(Protocol):
    """Runs the chat tools for one agent. An implementation returns a JSON-serialisable dict,
    and raises `ToolError`, whose message the model will read, for a call it refuses or cannot
    parse, having done nothing. Anything else it raises aborts the turn."""

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Progress:
    """What a running turn is doing, for `notifications/progress` or a typing indicator, never
    chat: `text` is a piece of streamed model text, `tool` names a tool about to run."""

    session: str
    event_ids: tuple[str, ...]
    text: str = ""
    tool: str | None = None


@dataclass(frozen=True, slots=True)
class TurnResult:
    """How a turn ended. `event_ids` are every event shown to the model, injected ones
    included. When `status` is `failed`, `failed` holds those ids and `reason` says why; the
    caller records the disposition (`record_failure`). `unstarted` are injected events the
    model never saw, because the turn ended first: start a new turn with them."""

    session: str
    status: Literal["completed", "failed"]
    event_ids: tuple[str, ...]
    failed: tuple[str, ...] = ()
    reason: str = ""
    text: str = ""
    unstarted: tuple[dict[str, Any], ...] = ()


@dataclass(slots=True)
class _Running:
    ids: list[str]
    queue: list[dict[str, Any]] = field(default_factory=list)


def session_of(params: Mapping[str, Any]) -> str:
    """The session of a `chat/deliver`'s params: its platform and conversation."""
    return f"{params['source']['platform']}:{params['conversation']['id']}"


class OpenAIModelLoop:
    """One agent's model turns against an OpenAI-compatible server; use it as an async context
    manager (or call `aclose`), which closes its HTTP connections.

    `base_url`, `model`, `api_key_env`, `timeout` (seconds, each model request) and `options`
    (extra request fields) are the `ChatClient`'s; `stream` asks for streamed replies, whose
    text goes to `on_progress` as it arrives. A ready `client` (such as `LocalModelClient`)
    answers instead, and then those are unused. `specs` are the tools offered (the chat tools by
    default); `instructions` follow the rules in the system message. `sessions` maps a
    session to its history.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        tools: ToolCaller,
        *,
        specs: Sequence[Mapping[str, Any]] | None = None,
        api_key_env: str | None = None,
        timeout: float = 120.0,
        max_tool_rounds: int = 8,
        malformed_retries: int = 3,
        instructions: str | None = None,
        options: Mapping[str, Any] | None = None,
        stream: bool = False,
        on_progress: Callable[[Progress], Awaitable[None]] | None = None,
        client: ModelClient | None = None,
    ) -> None:
        self.client: ModelClient = client or ChatClient(
            base_url,
            model,
            api_key_env=api_key_env,
            timeout=timeout,
            options=options,
            stream=stream,
        )
        self.tools = tools
        self.specs = list(specs if specs is not None else ChatTools.specs())
        self.max_tool_rounds = max_tool_rounds
        self.malformed_retries = malformed_retries
        self.system = f"{RESPONSE_RULES}\n\n{instructions}" if instructions else RESPONSE_RULES
        self.on_progress = on_progress
        self.sessions: OrderedDict[str, list[Message]] = OrderedDict()
        self._names = frozenset(str(spec["name"]) for spec in self.specs)
        self._running: dict[str, _Running] = {}

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client's connections; a later turn opens new ones."""
        await self.client.aclose()

    def inject(self, params: dict[str, Any]) -> bool:
        """Add a newly delivered event to the running turn of its session, to be shown before
        the model's next call; False when no turn is running there (start one instead). An
        event already in the turn is taken again without effect."""
        running = self._running.get(session_of(params))
        if running is None:
            return False
        queued = {p["eventId"] for p in running.queue}
        if params["eventId"] not in queued and params["eventId"] not in running.ids:
            running.queue.append(params)
        return True

    async def run(self, turn: Turn) -> TurnResult:
        """Run one turn to its end. Raises ModelError when the model server fails, and when
        cancelled stops at once; either way the session is left as it was, and the turn's
        events, injected ones too, stay unsettled for the caller to run again. Raises
        RuntimeError when a turn is already running in the session (`inject` instead)."""
        key = session_of(turn.events[0])
        if key in self._running:
            raise RuntimeError(f"a turn is already running in session {key}; inject instead")
        running = _Running(list(turn.event_ids))
        self._running[key] = running
        try:
            return await self._turn(key, turn, running)
        finally:
            del self._running[key]

    def _keep(self, key: str, messages: list[Message]) -> None:
        """The session's history for its next turn, trimmed; the least lately used session
        is forgotten past `SESSIONS_KEPT`."""
        self.sessions[key] = trimmed(messages)
        self.sessions.move_to_end(key)
        while len(self.sessions) > SESSIONS_KEPT:
            self.sessions.popitem(last=False)

    async def _turn(self, key: str, turn: Turn, running: _Running) -> TurnResult:
        before = self.sessions.get(key)
        messages = list(before) if before else [{"role": "system", "content": self.system}]
        messages.append(_user(turn.events))
        streak, rounds, error = 0, 0, ""
        while True:
            if running.queue:
                injected, running.queue = running.queue, []
                running.ids += [p["eventId"] for p in injected]
                messages.append(_user(injected))
            reply = await self._complete(messages, key, running)
            calls = reply.calls[:MAX_CALLS_PER_REPLY]
            messages.append(_assistant(ModelReply(reply.content, calls)))
            if not calls:
                if running.queue:
                    continue
                self._keep(key, messages)  # no await since the check: nothing slips in
                return TurnResult(key, "completed", tuple(running.ids), text=reply.content)
            rounds += 1
            malformed = False
            for call in calls:
                answer, bad = await self._execute(call, key, running)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": answer})
                if bad:
                    malformed, error = True, answer
            if len(reply.calls) > len(calls):  # a runaway: counted as malformed, and said
                malformed, error = True, _dropped(len(reply.calls) - len(calls))
                messages.append({"role": "user", "content": error})
            streak = streak + 1 if malformed else 0
            reason = ""
            if streak > self.malformed_retries:
                reason = f"{streak} malformed tool calls in a row; the last answer: {error}"
            elif rounds >= self.max_tool_rounds:
                reason = f"the model was still calling tools after {rounds} rounds"
            if reason:
                ids = tuple(running.ids)
                left, running.queue = tuple(running.queue), []
                return TurnResult(key, "failed", ids, ids, reason, reply.content, left)

    async def _execute(self, call: RawCall, key: str, running: _Running) -> tuple[str, bool]:
        """Run one call; returns the tool message's content and whether the call was
        malformed."""
        if call.name not in self._names:
            tools = ", ".join(sorted(self._names))
            return _error(f"unknown tool {call.name!r}; the tools are: {tools}"), True
        try:
            arguments = decode_arguments(call.arguments)
        except ValueError as exc:
            return _error(f"{call.name}: {exc}; call it again with one JSON object"), True
        for name in sorted(EVENT_ID_FIELDS & arguments.keys()):
            value = arguments[name]
            if value is not None and value not in running.ids:
                valid = ", ".join(running.ids)
                return _error(
                    f"unknown event id {value!r} in {name}; the event ids of this turn are: {valid}"
                ), True
        await self._progress(Progress(key, tuple(running.ids), tool=call.name))
        try:
            result = await self.tools.call(call.name, arguments)
        except ToolError as exc:
            return _error(str(exc)), False
        return json.dumps(result, ensure_ascii=False), False

    async def _complete(self, messages: list[Message], key: str, running: _Running) -> ModelReply:
        async def on_text(text: str) -> None:
            await self._progress(Progress(key, tuple(running.ids), text=text))

        tools = function_tools(self.specs, running.ids)
        return await self.client.complete(messages, tools, on_text)

    async def _progress(self, progress: Progress) -> None:
        if self.on_progress is not None:
            await self.on_progress(progress)


async def record_failure(port: AgentPort, result: TurnResult) -> list[str]:
    """Record `failed`, with the turn's reason, for each of a failed turn's events that the
    agent has not settled otherwise (answered, claimed, deferred...); returns their ids."""
    return await port.fail(result.failed, result.reason)


def _user(events: Sequence[Mapping[str, Any]]) -> Message:
    return {"role": "user", "content": render_turn([parse_deliver(p) for p in events])}


def _dropped(count: int) -> str:
    return (
        f"{count} more tool calls of your last reply were not run: at most "
        f"{MAX_CALLS_PER_REPLY} run a reply. Call again only what is still needed."
    )


def _assistant(reply: ModelReply) -> Message:
    message: Message = {"role": "assistant", "content": reply.content}
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                # Servers render history through chat templates that parse arguments as JSON,
                # so a malformed call goes back as `{}`; the tool message says what was wrong.
                "function": {"name": call.name, "arguments": _history_arguments(call)},
            }
            for call in reply.calls
        ]
    return message


def _history_arguments(call: RawCall) -> str:
    try:
        return json.dumps(decode_arguments(call.arguments), ensure_ascii=False)
    except ValueError:
        return "{}"


def _error(reason: str) -> str:
    return json.dumps({"error": reason}, ensure_ascii=False)
