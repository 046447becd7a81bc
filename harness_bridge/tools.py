"""The chat tools of spec 000, plus `leave` from spec 001, implemented once on the host.

Every tool reads the host's ledger (never the harness's mailbox) and sees only what was
delivered to its agent. Outbound actions (messages, reactions) go into the outbox under an
idempotency key, so a retried call never makes a second visible message; the platform adapters
send what the outbox holds. The guards live here: a reply or reaction the policy forbids, a
reply or reaction to an event another agent claimed, a long answer or a non-acknowledging
reaction to an `ack_only` event, or a second, different answer to an event already answered is
refused with a tool error that says why, and nothing is queued. Only a visible answer closes a
question: a reaction to a `must_respond` event records no disposition. A turn's final model
text reaches chat only through `reply_with_text`, which is a `chat_send_message` call.

The same implementation is offered as an MCP server (`harness_bridge.mcp_server`), as
function-tool schemas for the built-in model loop (`ChatTools.specs`), and over the C2A link
itself (`tools/list`, `tools/call`).
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from core.clock import format_time
from core.decision import Directedness, Disposition, Policy
from core.engine import Engine
from core.errors import ToolError
from core.followup import REMINDER_SUFFIX
from core.signals import SIGNAL_DISPOSITION, Signal
from core.store import LedgerEntry, OutboxEntry, StoredDelivery

__all__ = ["TOOL_NAMES", "ChatTools", "ToolError"]

RECEIPT_CHARS = 120
# Ledger kinds a conversation's reading leaves out: who joined, which thread opened.
_HOUSEKEEPING = frozenset({"x.c2a.member_joined", "x.c2a.member_left", "x.c2a.thread_created"})
# A delivery in one of these states still owes its answer.
_UNANSWERED = frozenset({None, Disposition.CLAIMED, Disposition.FAILED})
# Dispositions a reaction alone cannot earn on a question: they promise an answer.
_NEEDS_FOLLOW_THROUGH = frozenset({Disposition.RESPONDED, Disposition.CLAIMED})


class _Args(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ListEvents(_Args):
    """List chat events delivered to you, newest last; filter by conversation or policy."""

    conversation: str | None = None
    policy: Policy | None = None
    before_sequence: int | None = None
    limit: int = Field(default=20, ge=1, le=200)


class ReadThread(_Args):
    """Read a conversation or one thread of it (the text of deleted messages is gone)."""

    conversation: str
    thread: str | None = None
    limit: int = Field(default=50, ge=1, le=200)


class Target(_Args):
    """Where to post: a conversation id and optional thread, or the delivery's own
    `conversation` object (`{"id", "kind", "threadId"}`), as the target or as its
    `conversation`."""

    conversation: str
    thread: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _conversation_object(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        if "conversation" not in value and "id" in value:
            value = {"conversation": value}
        named = value.get("conversation")
        if not isinstance(named, dict) or "id" not in named:
            return value
        thread = value.get("thread", named.get("threadId", named.get("thread_id")))
        return {"conversation": named["id"], "thread": thread}


class SendMessage(_Args):
    """Send a chat message, idempotently. Mention (directedness to_me, exactly one recipient)
    only to create an obligation; post without recipients to share context."""

    target: Target
    text: str = Field(min_length=1, max_length=40_000)
    in_reply_to: str | None = None
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)
    visibility: Literal["dm", "thread", "channel", "ephemeral"] = "thread"
    directedness: Directedness = Directedness.AMBIENT
    recipients: list[str] = Field(default_factory=list, max_length=20)


class React(_Args):
    """Answer with a typed reaction signal instead of a message (a zero-turn disposition)."""

    in_reply_to: str
    signal: Signal
    eta: str | None = None


class Claim(_Args):
    """Claim responsibility for an event before a substantive reply."""

    event_id: str


class Defer(_Args):
    """Accept a must-respond event but answer later, saying why."""

    event_id: str
    reason: str = Field(min_length=1, max_length=2000)
    eta: str | None = None


class Resolve(_Args):
    """Mark an event resolved."""

    event_id: str
    note: str | None = None


class EditMessage(_Args):
    """Change the text of a message you sent, named by the idempotency key it was sent with."""

    idempotency_key: str
    text: str = Field(min_length=1, max_length=4000)


class DeleteMessage(_Args):
    """Delete a message you sent, named by the idempotency key it was sent with."""

    idempotency_key: str


class Leave(_Args):
    """Leave a channel or thread you were asked to leave; you return only when mentioned."""

    conversation: str
    thread: str | None = None


_ARGS: dict[str, type[_Args]] = {
    "chat_list_events": ListEvents,
    "chat_read_thread": ReadThread,
    "chat_send_message": SendMessage,
    "chat_react": React,
    "chat_claim": Claim,
    "chat_defer": Defer,
    "chat_resolve": Resolve,
    "chat_leave": Leave,
    "chat_edit_message": EditMessage,
    "chat_delete_message": DeleteMessage,
}
TOOL_NAMES: tuple[str, ...] = tuple(_ARGS)


class ChatTools:
    """The chat tools of one agent."""

    def __init__(self, engine: Engine, agent: str) -> None:
        self.engine = engine
        self.agent = agent
        self._sends: dict[str, deque[datetime]] = {}
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
        }

    @staticmethod
    def specs() -> list[dict[str, Any]]:
        """Function-tool schemas: name, description and JSON Schema of the arguments."""
        return [
            {
                "name": name,
                "description": (model.__doc__ or "").strip(),
                "inputSchema": model.model_json_schema(by_alias=True),
            }
            for name, model in _ARGS.items()
        ]

    async def call(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """Run one tool; raises ToolError for an unknown tool, bad arguments or a refusal."""
        model = _ARGS.get(name)
        if model is None:
            raise ToolError(f"unknown tool {name!r}; the tools are {', '.join(TOOL_NAMES)}")
        try:
            try:
                args = model.model_validate(arguments or {})
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                    for e in exc.errors()
                )
                raise ToolError(f"invalid arguments for {name}: {problems}") from None
            result = await self._run[name](args)
        except ToolError as exc:
            await self._audit(name, arguments, "refused", {"reason": str(exc)})
            raise
        await self._audit(name, arguments, "ok", result)
        return result

    async def _audit(
        self, name: str, arguments: dict[str, Any] | None, outcome: str, what: dict[str, Any]
    ) -> None:
        """Every tool call is kept: its arguments (message text as its length only) and outcome,
        redacted, since a model's arguments and a refusal's reason may quote a secret."""
        shown = dict(arguments or {})
        if isinstance(shown.get("text"), str):
            shown["text"] = f"[{len(shown['text'])} characters]"
        if name in ("chat_list_events", "chat_read_thread"):
            what = {"events": len(what.get("events", []))}
        detail: dict[str, Any] = self.engine.redactor.data({"arguments": shown, "result": what})
        try:
            orjson.dumps(detail)
        except TypeError as exc:  # a model can write what the ledger's JSON cannot hold
            detail = {"arguments": f"[not storable: {exc}]", "result": what}
        async with self.engine.store.transaction():
            await self.engine.store.audit(self.agent, name, outcome, detail, self._now())

    # ---- reading -----------------------------------------------------------------------------

    async def list_events(self, args: ListEvents) -> dict[str, Any]:
        rows = await self.engine.store.seen_by(
            self.agent,
            conversation=args.conversation,
            before_seq=args.before_sequence,
            limit=args.limit,
        )
        events = [_view(e, d) for e, d in rows if args.policy in (None, d.decision.policy)]
        return {"events": events}

    async def read_thread(self, args: ReadThread) -> dict[str, Any]:
        rows = await self.engine.store.seen_by(
            self.agent, conversation=args.conversation, thread=args.thread, limit=args.limit
        )
        said = [(e, d) for e, d in rows if e.kind not in _HOUSEKEEPING]
        return {"events": [_view(e, d) for e, d in said]}

    # ---- acting ------------------------------------------------------------------------------

    async def send_message(self, args: SendMessage) -> dict[str, Any]:
        delivery = await self._delivery(args.in_reply_to) if args.in_reply_to else None
        key = args.idempotency_key or self._derived_key(args)
        store = self.engine.store
        repeat = await store.outbox_has(key)
        if delivery is not None:
            self._guard_reply(delivery, args, repeat)
        if not repeat:
            self._pace(args.target.conversation)
        mentions = self._mentions(args)
        action = {
            "action": "send",
            "agent": self.agent,
            "platform": await self._platform(args.target.conversation, args.in_reply_to),
            "conversation": args.target.conversation,
            "thread": args.target.thread,
            "text": args.text,
            "visibility": args.visibility,
            "directedness": args.directedness.value,
            "mentions": mentions,
            "inReplyTo": args.in_reply_to,
            "idempotencyKey": key,
        }
        async with store.transaction():
            queued = await self.engine.queue(key, self.agent, action, self._now())
            if queued and delivery is not None:
                ack_only = delivery.decision.policy is Policy.ACK_ONLY
                disposition = Disposition.ACKNOWLEDGED if ack_only else Disposition.RESPONDED
                await self._dispose(delivery, disposition, f"answered with message {key}")
                reminded = await self._reminded(delivery)
                if reminded is not None:  # answering a reminder answers its question
                    await self._dispose(reminded, disposition, f"answered with message {key}")
        return {"status": "queued" if queued else "duplicate", "idempotencyKey": key}

    async def react(self, args: React) -> dict[str, Any]:
        delivery = await self._delivery(args.in_reply_to)
        self._guard_reaction(delivery, args.signal)
        key = f"{delivery.decision.idempotency_key}:react:{args.signal.value}"
        event = await self.engine.event(args.in_reply_to)
        if event is None or event.message_id is None:
            raise ToolError(f"{args.in_reply_to!r} is not a message you can react to")
        action = {
            "action": "react",
            "agent": self.agent,
            "platform": event.platform,
            "conversation": event.conversation.id,
            "messageId": event.message_id,
            "signal": args.signal.value,
            "eventId": args.in_reply_to,
            "eta": args.eta,
            "idempotencyKey": key,
        }
        store = self.engine.store
        async with store.transaction():
            queued = await self.engine.queue(key, self.agent, action, self._now())
            disposition = _reaction_disposition(delivery.decision.policy, args.signal)
            if queued and disposition is not None:
                await self._dispose(delivery, disposition, f"signal {args.signal.value}")
        return {"status": "queued" if queued else "duplicate", "idempotencyKey": key}

    async def claim(self, args: Claim) -> dict[str, Any]:
        delivery = await self._delivery(args.event_id)
        async with self.engine.store.transaction():
            result, _ = await self.engine.claim(self.agent, args.event_id)
            if result.granted:
                await self._dispose(delivery, Disposition.CLAIMED, "claimed")
        return {
            "claimed": result.granted,
            "holder": f"agent:{result.holder}",
            "expiresAt": format_time(result.expires_at),
        }

    async def defer(self, args: Defer) -> dict[str, Any]:
        delivery = await self._delivery(args.event_id)
        async with self.engine.store.transaction():
            await self._dispose(delivery, Disposition.DEFERRED, args.reason)
        return {"disposition": Disposition.DEFERRED.value}

    async def resolve(self, args: Resolve) -> dict[str, Any]:
        delivery = await self._delivery(args.event_id)
        async with self.engine.store.transaction():
            await self._dispose(delivery, Disposition.RESPONDED, args.note or "resolved")
        return {"disposition": Disposition.RESPONDED.value}

    async def leave(self, args: Leave) -> dict[str, Any]:
        place = f"{args.conversation}/{args.thread}" if args.thread else args.conversation
        async with self.engine.store.transaction():
            await self.engine.leave(self.agent, place)
        return {"left": place}

    # ---- a turn's final text -----------------------------------------------------------------

    async def owed(self, event_ids: Sequence[str]) -> list[StoredDelivery]:
        """The deliveries among `event_ids`, in their order, that still owe a visible answer:
        `must_respond`, or `may_respond` with this agent holding the event's claim (the one
        selected to answer a role mention); not answered yet (at most claimed, or failed
        before) and not claimed by another agent."""
        now = self.engine.clock.now()
        owed: list[StoredDelivery] = []
        for event_id in event_ids:
            delivery = await self._mine(event_id)
            if delivery is None or delivery.disposition not in _UNANSWERED:
                continue
            holder = self.engine.state.claim_holder(event_id, now)
            policy = delivery.decision.policy
            mine = holder == self.agent
            if (policy is Policy.MUST_RESPOND and holder in (None, self.agent)) or (
                policy is Policy.MAY_RESPOND and mine
            ):
                owed.append(delivery)
        return owed

    async def reply_with_text(self, event_ids: Sequence[str], text: str) -> dict[str, Any] | None:
        """A turn's final model text as its reply, sent as a `chat_send_message` call (the same
        guards, send budget, idempotency key and audit): in reply to the last of `event_ids`
        that still owes an answer (`owed`), in that event's conversation and thread. The others
        owed there are answered by the same message. Returns the call's result, or None, having
        done nothing, when nothing is owed or the text is blank; raises ToolError when the send
        is refused."""
        owed = await self.owed(event_ids)
        said = text.strip()
        if not owed or not said:
            return None
        last = owed[-1].decision.event_id
        event = await self.engine.event(last)
        if event is None:
            return None
        place = event.conversation
        target = {"conversation": place.id, "thread": place.thread_id}
        args = {"target": target, "text": said, "inReplyTo": last}
        result = await self.call("chat_send_message", args)
        if result["status"] != "queued":
            return result
        async with self.engine.store.transaction():
            for delivery in owed[:-1]:
                other = await self.engine.event(delivery.decision.event_id)
                if other is not None and other.conversation.key == place.key:
                    why = f"answered with message {result['idempotencyKey']}"
                    await self._dispose(delivery, Disposition.RESPONDED, why)
        return result

    async def edit_message(self, args: EditMessage) -> dict[str, Any]:
        sent = await self._own_message(args.idempotency_key)
        digest = hashlib.sha256(args.text.encode()).hexdigest()[:16]
        return await self.queue_change(
            sent, "edit", f"{args.idempotency_key}:edit:{digest}", {"text": args.text}
        )

    async def delete_message(self, args: DeleteMessage) -> dict[str, Any]:
        sent = await self._own_message(args.idempotency_key)
        return await self.queue_change(sent, "delete", f"{args.idempotency_key}:delete", {})

    async def _own_message(self, key: str) -> OutboxEntry:
        """A message this agent sent that has landed (edits and deletes need its id)."""
        entry = await self.engine.store.outbox_get(key)
        if entry is None or entry.agent != self.agent or entry.action.get("action") != "send":
            raise ToolError(f"you sent no message with idempotency key {key!r}")
        if entry.status != "sent" or not (entry.result or {}).get("messageId"):
            raise ToolError(f"message {key!r} has not been posted yet ({entry.status}); try later")
        return entry

    async def queue_change(
        self, sent: OutboxEntry, kind: str, key: str, extra: dict[str, Any]
    ) -> dict[str, Any]:
        """Queue an `edit` or `delete` of the agent's posted message `sent`, keyed `key`, with
        `extra` fields (the new text, a draft mark); the guards are the caller's."""
        original = sent.action
        action = {
            "action": kind,
            "agent": self.agent,
            "platform": original["platform"],
            "conversation": original["conversation"],
            "thread": original.get("thread"),
            "messageId": (sent.result or {})["messageId"],
            "mentions": original.get("mentions", []),
            "idempotencyKey": key,
            **extra,
        }
        store = self.engine.store
        async with store.transaction():
            queued = await self.engine.queue(key, self.agent, action, self._now())
        return {"status": "queued" if queued else "duplicate", "idempotencyKey": key}

    # ---- guards ------------------------------------------------------------------------------

    async def _delivery(self, event_id: str) -> StoredDelivery:
        delivery = await self._mine(event_id)
        if delivery is None:
            raise ToolError(f"no event {event_id!r} was delivered to you")
        return delivery

    async def _reminded(self, delivery: StoredDelivery) -> StoredDelivery | None:
        """The delivery a reminder reminds of, when `delivery` is a reminder."""
        decision = delivery.decision
        if decision.reason != "reminder" or not decision.event_id.endswith(REMINDER_SUFFIX):
            return None
        return await self._mine(decision.event_id.removesuffix(REMINDER_SUFFIX))

    async def _mine(self, event_id: str) -> StoredDelivery | None:
        for delivery in await self.engine.store.deliveries(event_id):
            if delivery.decision.agent == self.agent:
                return delivery
        return None

    def _guard_reply(self, delivery: StoredDelivery, args: SendMessage, repeat: bool) -> None:
        """Refuse what the policy, a claim or an earlier answer forbids; `repeat` is a retry of
        a call already queued under the same key, which is always fine."""
        if repeat:
            return
        self._guard_policy(delivery)
        decision = delivery.decision
        if decision.policy is Policy.ACK_ONLY and len(args.text) > RECEIPT_CHARS:
            raise ToolError(
                f"refused: {decision.event_id} is ack_only; react, or send a short receipt "
                f"of at most {RECEIPT_CHARS} characters"
            )
        answered = delivery.disposition in (Disposition.RESPONDED, Disposition.ACKNOWLEDGED)
        if answered:
            raise ToolError(
                f"refused: you already answered {decision.event_id}; a different answer "
                "needs the first to have failed"
            )

    def _guard_policy(self, delivery: StoredDelivery) -> None:
        """Refuse any answer, message or reaction, to what the policy or a claim keeps this
        agent out of."""
        decision = delivery.decision
        if decision.policy is Policy.MUST_NOT_RESPOND:
            raise ToolError(
                f"refused: {decision.event_id} is must_not_respond for you "
                f"({decision.reason}); do not answer it, not even with a reaction"
            )
        holder = self.engine.state.claim_holder(decision.event_id, self.engine.clock.now())
        if holder is not None and holder != self.agent:
            raise ToolError(f"refused: agent:{holder} claimed {decision.event_id}; stay out")

    def _guard_reaction(self, delivery: StoredDelivery, signal: Signal) -> None:
        """A reaction follows the policy like a message; on `ack_only` it is the answer, so
        only an acknowledgement (`seen`, `agree`): a commitment or a verdict answers nothing."""
        self._guard_policy(delivery)
        decision = delivery.decision
        acknowledges = SIGNAL_DISPOSITION[signal] is Disposition.ACKNOWLEDGED
        if decision.policy is Policy.ACK_ONLY and not acknowledges:
            raise ToolError(
                f"refused: {decision.event_id} is ack_only; acknowledge it with seen or agree, "
                f"not {signal.value}"
            )

    def _pace(self, conversation: str) -> None:
        """At most `sends_per_minute` new messages from this agent in one conversation."""
        now = self.engine.clock.now()
        sent = self._sends.setdefault(conversation, deque())
        while sent and sent[0] <= now - timedelta(minutes=1):
            sent.popleft()
        limit = self.engine.workspace.settings.sends_per_minute
        if len(sent) >= limit:
            raise ToolError(
                f"refused: you sent {limit} messages in {conversation} in the last minute; "
                "wait, or say it in fewer messages"
            )
        sent.append(now)

    def _mentions(self, args: SendMessage) -> list[str]:
        wants = args.directedness in (Directedness.TO_ME, Directedness.TO_MY_ROLE)
        if not wants:
            if args.recipients:
                raise ToolError(
                    "a post with directedness ambient or to_other mentions nobody; "
                    "drop recipients, or choose to_me (one recipient) to create an obligation"
                )
            return []
        if args.directedness is Directedness.TO_ME and len(args.recipients) != 1:
            raise ToolError("directedness to_me obligates exactly one recipient")
        workspace = self.engine.workspace
        for recipient in args.recipients:
            kind, _, name = recipient.partition(":")
            known = (
                (kind == "agent" and name in workspace.manifest.agents)
                or (kind == "role" and name in workspace.manifest.roles)
                or (kind == "user" and bool(name))
            )
            if not known:
                raise ToolError(
                    f"unknown recipient {recipient!r}: use agent:<id>, role:<name> or "
                    "user:<platform id>"
                )
        return list(args.recipients)

    async def _platform(self, conversation: str, in_reply_to: str | None) -> str:
        """Which platform a conversation is on, from what the agent has seen there."""
        if in_reply_to is not None:
            event = await self.engine.event(in_reply_to)
            if event is not None:
                return event.platform
        seen = await self.engine.store.seen_by(self.agent, conversation=conversation, limit=1)
        if not seen:
            raise ToolError(f"you have seen nothing in conversation {conversation!r}")
        return str(seen[0][0].data["platform"])

    def _derived_key(self, args: SendMessage) -> str:
        """A key for a call that brought none: the same call (same reply, target and text)
        always gets the same key, so a retry is recognised."""
        where = args.in_reply_to or f"{args.target.conversation}/{args.target.thread or ''}"
        digest = hashlib.sha256(args.text.encode()).hexdigest()[:16]
        return f"{where}:{self.agent}:send:{digest}"

    async def _dispose(self, delivery: StoredDelivery, disposition: Disposition, why: str) -> None:
        await self.engine.dispose(self.agent, delivery.decision.event_id, disposition, why)

    def _now(self) -> str:
        return format_time(self.engine.clock.now())


def _reaction_disposition(policy: Policy, signal: Signal) -> Disposition | None:
    """What a reaction records. Only a visible answer closes a question, so on `must_respond`
    a reaction is a status people see and records nothing (a reminder follows if no answer
    does); on `may_respond` it records its disposition unless that would say answered
    (`done`) or owned (`working`, `claimed`) with nothing to show for it."""
    disposition = SIGNAL_DISPOSITION[signal]
    if policy is Policy.MUST_RESPOND:
        return None
    if policy is Policy.MAY_RESPOND and disposition in _NEEDS_FOLLOW_THROUGH:
        return None
    return disposition


def _view(entry: LedgerEntry, delivery: StoredDelivery) -> dict[str, Any]:
    """An event as a tool shows it: ids, who, where, what the host decided, and the text
    (empty once the message was deleted)."""
    data = entry.data
    decision = delivery.decision
    return {
        "eventId": entry.id,
        "sequence": entry.seq,
        "kind": data["kind"],
        "conversation": data["conversation"],
        "author": data["author"],
        "createdAt": data["created_at"],
        "text": data.get("text", ""),
        "deleted": bool(data.get("deleted")),
        "directedness": decision.directedness.value,
        "policy": decision.policy.value,
        "reason": decision.reason,
        "disposition": delivery.disposition.value if delivery.disposition else None,
    }
