"""The chat tools of spec 000, plus `leave` from spec 001: the names, the JSON Schemas and the
JSON results of one agent's `AgentPort` (`core.agent_port`).

This module only translates. A call's arguments are validated against its schema (the
pydantic models of `harness_bridge.tool_args`, which are the wire schema), become one port
call, and its typed result becomes the tool's JSON; whether the agent may do it at all is the
port's to decide, and a refusal is the port's `ToolError`, passed on unchanged. Every call,
done or refused, is kept in the audit log through the port. A turn's final model text reaches
chat only through `reply_with_text`, which is a `chat_send_message` call.

The same tools are offered as an MCP server (`harness_bridge.mcp_server`), as function-tool
schemas for the built-in model loop (`ChatTools.specs`), and over the C2A link itself
(`tools/list`, `tools/call`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, Final

from core.agent_port import AgentPort, EventFilter, EventView, Outgoing, Queued, ToolCall
from core.clock import format_time
from core.errors import ToolError
from core.post_files import PostFile
from harness_bridge.tool_args import (
    ARGS,
    MAX_MESSAGE_CHARS,
    TOOL_NAMES,
    Claim,
    Defer,
    DeleteMessage,
    EditMessage,
    Leave,
    ListEvents,
    React,
    ReadFile,
    ReadThread,
    Resolve,
    SendMessage,
    parsed,
)

__all__ = ["MAX_MESSAGE_CHARS", "MAX_READ_CHARS", "TOOL_NAMES", "ChatTools", "ToolError"]

MAX_READ_CHARS: Final = 200_000
"""The most characters of message text one read (`chat_list_events`, `chat_read_thread`)
returns: the newest events that fit, and how many older ones did not. Two hundred messages of
40,000 characters would otherwise be 8 MB in the model's next request, past any model's
context."""

# Tools whose results are long lists of events: the audit log keeps only their count.
_READS = frozenset({"chat_list_events", "chat_read_thread"})


class ChatTools:
    """The chat tools of one agent, each one call of its port."""

    def __init__(self, port: AgentPort) -> None:
        self.port = port
        self._run: dict[str, Callable[[Any], Awaitable[dict[str, Any]]]] = {
            "chat_list_events": self.list_events,
            "chat_read_thread": self.read_thread,
            "chat_send_message": self.send_message,
            "chat_react": self.react,
            "chat_claim": self.claim,
            "chat_defer": self.defer,
            "chat_resolve": self.resolve,
            "chat_leave": self.leave,
            "chat_edit_message": self.edit_message,
            "chat_delete_message": self.delete_message,
            "chat_read_file": self.read_file,
        }

    @property
    def agent(self) -> str:
        return self.port.agent

    @staticmethod
    def specs() -> list[dict[str, Any]]:
        """Function-tool schemas: name, description and JSON Schema of the arguments."""
        return [
            {
                "name": name,
                "description": (model.__doc__ or "").strip(),
                "inputSchema": model.model_json_schema(by_alias=True),
            }
            for name, model in ARGS.items()
        ]

    async def call(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Run one tool; raises ToolError for an unknown tool, bad arguments or a refusal."""
        model = ARGS.get(name)
        if model is None:
            raise ToolError(f"unknown tool {name!r}; the tools are {', '.join(TOOL_NAMES)}")

        async def run() -> dict[str, Any]:
            return await self._run[name](parsed(name, model, arguments))

        return await self._audited(name, arguments, run)

    async def reply_with_text(
        self, event_ids: Sequence[str], text: str, *, writing: bool = False
    ) -> dict[str, Any] | None:
        """A turn's final model text as its reply, sent as a `chat_send_message` call (the same
        validation, guards, send budget, idempotency key and audit): in reply to the last of
        `event_ids` that still owes an answer (`AgentPort.owed`), in that event's conversation
        and thread, answering the others owed there too. Returns the call's result, or None,
        having done nothing, when nothing is owed or the text is blank; raises ToolError when
        the send is refused. `writing`: the first words of a reply still being drawn
        (`harness_bridge.streamed_reply`)."""
        reply = await self.port.final_reply(event_ids, text)
        if reply is None:
            return None
        target = {"conversation": reply.conversation, "thread": reply.thread}
        arguments = {"target": target, "text": reply.text, "inReplyTo": reply.in_reply_to}
        return await self._send(arguments, also_answers=reply.also_answers, writing=writing)

    async def send_part(self, arguments: dict[str, Any], *, writing: bool) -> dict[str, Any]:
        """A further message of a reply the host is drawing: `chat_send_message` with these
        `arguments`, the first words of one still being written when `writing`."""
        return await self._send(arguments, writing=writing)

    async def _send(
        self,
        arguments: dict[str, Any],
        *,
        also_answers: tuple[str, ...] = (),
        writing: bool = False,
    ) -> dict[str, Any]:
        """`chat_send_message` as the host makes it for the agent, with the two fields of
        `Outgoing` no model sets."""

        async def run() -> dict[str, Any]:
            args = parsed("chat_send_message", SendMessage, arguments)
            message = replace(_outgoing(args), also_answers=also_answers, writing=writing)
            return await self._sent(self.port.send(message))

        return await self._audited("chat_send_message", arguments, run)

    async def _audited(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        run: Callable[[], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """`run` the call, keeping it in the audit log whether it is done or refused (a read
        as the number of events it showed)."""
        try:
            result = await run()
        except ToolError as exc:
            await self._record(name, arguments, "refused", {"reason": str(exc)})
            raise
        await self._record(name, arguments, "ok", result)
        return result

    async def _record(
        self, name: str, arguments: dict[str, Any] | None, outcome: str, what: dict[str, Any]
    ) -> None:
        if name in _READS:
            what = {"events": len(what.get("events", []))}
        elif name == "chat_read_file" and outcome == "ok":  # the file's bytes stay out
            what = {key: what[key] for key in ("fileId", "name", "mimetype", "size")}
        await self.port.record_call(ToolCall(name, arguments, outcome, what))

    # ---- one port call each ------------------------------------------------------------------

    async def list_events(self, args: ListEvents) -> dict[str, Any]:
        which = EventFilter(
            conversation=args.conversation,
            policy=args.policy,
            before_sequence=args.before_sequence,
            limit=args.limit,
        )
        return _views(await self.port.list_events(which))

    async def read_thread(self, args: ReadThread) -> dict[str, Any]:
        return _views(
            await self.port.read_thread(args.conversation, thread=args.thread, limit=args.limit)
        )

    async def read_file(self, args: ReadFile) -> dict[str, Any]:
        found = await self.port.read_file(args.event_id, args.file_id)
        file = found.file
        result: dict[str, Any] = {
            "fileId": file.id,
            "name": file.name,
            "mimetype": file.mimetype,
            "size": file.size,
        }
        if found.text is not None:
            result["text"] = found.text
        if found.image is not None:
            result["image"] = {"data": found.image, "mimeType": file.mimetype}
        return result

    async def send_message(self, args: SendMessage) -> dict[str, Any]:
        return await self._sent(self.port.send(_outgoing(args)))

    async def react(self, args: React) -> dict[str, Any]:
        return await self._sent(self.port.react(args.in_reply_to, args.signal, eta=args.eta))

    async def claim(self, args: Claim) -> dict[str, Any]:
        result = await self.port.claim(args.event_id)
        return {
            "claimed": result.granted,
            "holder": f"agent:{result.holder}",
            "expiresAt": format_time(result.expires_at),
        }

    async def defer(self, args: Defer) -> dict[str, Any]:
        disposition = await self.port.defer(args.event_id, args.reason, eta=args.eta)
        return {"disposition": disposition.value}

    async def resolve(self, args: Resolve) -> dict[str, Any]:
        disposition = await self.port.resolve(args.event_id, args.note)
        return {"disposition": disposition.value}

    async def leave(self, args: Leave) -> dict[str, Any]:
        return {"left": await self.port.leave(args.conversation, args.thread)}

    async def edit_message(self, args: EditMessage) -> dict[str, Any]:
        return await self._sent(self.port.edit(args.idempotency_key, args.text))

    async def delete_message(self, args: DeleteMessage) -> dict[str, Any]:
        return await self._sent(self.port.delete(args.idempotency_key))

    @staticmethod
    async def _sent(queuing: Awaitable[Queued]) -> dict[str, Any]:
        queued = await queuing
        return {"status": "queued" if queued.new else "duplicate", "idempotencyKey": queued.key}


def _outgoing(args: SendMessage) -> Outgoing:
    return Outgoing(
        conversation=args.target.conversation,
        thread=args.target.thread,
        text=args.text,
        in_reply_to=args.in_reply_to,
        key=args.idempotency_key,
        visibility=args.visibility,
        directedness=args.directedness,
        recipients=tuple(args.recipients),
        files=tuple(PostFile(f.name, f.content) for f in args.files),
    )


def _views(events: Sequence[EventView]) -> dict[str, Any]:
    """A read's result: the newest of `events` whose text fits in `MAX_READ_CHARS` (at least
    one), oldest first, and `omitted`, how many older ones did not fit, when any."""
    shown: list[dict[str, Any]] = []
    room = MAX_READ_CHARS
    for event in reversed(events):
        room -= len(event.text)
        if room < 0 and shown:
            break
        shown.append(_view(event))
    result: dict[str, Any] = {"events": shown[::-1]}
    if len(shown) < len(events):
        result["omitted"] = len(events) - len(shown)
        result["note"] = (
            f"{result['omitted']} older events left out: a read returns at most "
            f"{MAX_READ_CHARS:,} characters of text; list them with beforeSequence"
        )
    return result


def _view(event: EventView) -> dict[str, Any]:
    """An event as a tool shows it: ids, who, where, what the host decided, the text (empty
    once the message was deleted) and, when it has any, its files as `chat_read_file` names
    them (never where the platform serves them)."""
    shown: dict[str, Any] = {
        "eventId": event.event_id,
        "sequence": event.sequence,
        "kind": event.kind,
        "conversation": event.conversation,
        "author": event.author,
        "createdAt": event.created_at,
        "text": event.text,
        "deleted": event.deleted,
        "directedness": event.directedness.value,
        "policy": event.policy.value,
        "reason": event.reason,
        "disposition": event.disposition.value if event.disposition else None,
    }
    if event.attachments:
        shown["attachments"] = [
            {"fileId": a.id, "name": a.name, "mimetype": a.mimetype, "size": a.size}
            for a in event.attachments
        ]
    return shown
