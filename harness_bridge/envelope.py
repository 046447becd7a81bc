"""The one place the host's typed emissions become the JSON-RPC messages a harness reads:
`chat/deliver` from a `core.emission.Delivery`, `notifications/cancelled` from a `Cancel`,
`notifications/typing` from a `Typing`.

A delivery's message is built once per send, from the same typed value whether it is the
first attempt or a redelivery read back from the ledger. Plain dicts are built here for speed;
`harness_bridge.wire` holds the pydantic models that describe exactly these shapes, and the tests
validate every message built here against them. Nothing in a knock is taken from message
text: its topic is the host's (`Delivery.topic`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from core.attachments import Attachment
from core.clock import format_time
from core.decision import Decision, Directedness, InjectionMode, Policy, Priority
from core.emission import Cancel, Delivery, Typing
from core.events import AuthorKind, ChatEvent, Conversation, ConversationKind, EventKind
from core.signals import Signal
from harness_bridge.wire import METHOD_CANCELLED, METHOD_DELIVER, METHOD_TYPING, compact_policy

__all__ = ["deliver_params", "deliver_request", "message", "notification"]

_THREAD_CONTEXT = "thread_window"
_TURNS = (InjectionMode.BUFFERED, InjectionMode.IMMEDIATE)
# Reading an enum member off its class costs a lookup on every use; the hot paths read these.
_MESSAGE, _EDIT = EventKind.MESSAGE, EventKind.EDIT
_NOTIFY, _DM, _TO_ME = InjectionMode.NOTIFY, ConversationKind.DM, Directedness.TO_ME


def message(
    emission: Delivery | Cancel | Typing, *, compact: bool = False, attempt: int = 1
) -> dict[str, Any]:
    """The whole JSON-RPC message for an emission a harness is sent."""
    if isinstance(emission, Delivery):
        return deliver_request(emission, compact=compact, attempt=attempt)
    method, params = notification(emission)
    return {"jsonrpc": "2.0", "method": method, "params": params}


def deliver_request(
    delivery: Delivery, *, compact: bool = False, attempt: int = 1
) -> dict[str, Any]:
    """The `chat/deliver` request for one delivery, `attempt` its try (1 the first); its id is
    `deliver:<sequence>:<agent>:<attempt>`."""
    return {
        "jsonrpc": "2.0",
        "id": f"deliver:{delivery.seq}:{delivery.decision.agent}:{attempt}",
        "method": METHOD_DELIVER,
        "params": deliver_params(delivery, compact=compact, attempt=attempt),
    }


def deliver_params(
    delivery: Delivery, *, compact: bool = False, attempt: int = 1
) -> dict[str, Any]:
    """`chat/deliver` params: spec 000's envelope; with `compact`, also spec 001's
    `addressedToMe`, `policy` and plain-text `content`, the typed parts in `contentParts`.

    (On this path `str()` of a StrEnum member gives its value several times faster than
    `.value` does.)"""
    event, decision, facts = delivery.event, delivery.decision, delivery.facts
    conversation = event.conversation
    attention, injection = _verdict(
        decision.policy,
        decision.reason,
        decision.priority,
        decision.deadline_ms,
        decision.claimed_by,
        decision.mode,
        conversation.kind is _DM and conversation.thread_id is None,
    )
    withheld = decision.mode is _NOTIFY
    shared = _SHARED.parts(delivery)
    parts = [] if withheld else shared.content
    target: dict[str, Any] = {
        "mentions": shared.mentions,
        "directedness": str(decision.directedness),
    }
    if delivery.recipient is not None:
        target["recipient"] = delivery.recipient
    params: dict[str, Any] = {
        "eventId": decision.event_id,
        "source": shared.source,
        "conversation": shared.conversation,
        "author": shared.author,
        "target": target,
        "content": parts,
        "timing": shared.timing,
        "attention": attention,
        "injection": injection,
        "reliability": {"attempt": attempt, "idempotencyKey": decision.idempotency_key},
    }
    if decision.supersedes is not None:
        params["supersedes"] = decision.supersedes
    if decision.continues is not None:
        params["continues"] = decision.continues
    if withheld:
        params["knock"] = _knock(event, decision, facts.author_agent, delivery.topic or "")
    if compact:
        params["addressedToMe"] = decision.directedness is _TO_ME
        params["policy"] = compact_policy(decision.policy)
        params["contentParts"] = parts
        params["content"] = "" if withheld else event.text
    if delivery.reminder_seq is not None:
        params["reminds"] = event.event_id
    if event.attachments and not withheld:
        params["attachments"] = _attachments(event.attachments)
    return params


def notification(emission: Cancel | Typing) -> tuple[str, dict[str, Any]]:
    """The method and params of a notification: a cancellation or a typing hint."""
    if isinstance(emission, Cancel):
        return METHOD_CANCELLED, {"eventId": emission.event_id, "reason": emission.reason}
    conversation = _conversation(emission.conversation, emission.conversation.kind.value)
    return METHOD_TYPING, {
        "conversation": conversation,
        "authorId": emission.author_id,
        "until": format_time(emission.until),
    }


@dataclass(slots=True)
class _Parts:
    """The parts of `chat/deliver` that are the same for every agent told of one event."""

    source: dict[str, Any]
    conversation: dict[str, Any]
    author: dict[str, Any]
    mentions: list[str]
    content: list[dict[str, Any]]
    timing: dict[str, Any]


class _SharedParts:
    """The last event's shared parts, built once for all the agents told of it in a row (as
    ingest returns them), like `_verdict`'s parts: nothing changes a message once it is built.
    It holds the event and its facts, so it can tell them by identity."""

    def __init__(self) -> None:
        self._key: tuple[object, ...] = ()
        self._parts: _Parts | None = None

    def parts(self, delivery: Delivery) -> _Parts:
        event, facts = delivery.event, delivery.facts
        key = (event, facts, delivery.sequence, delivery.received)
        last = self._key
        if (
            self._parts is not None
            and last[0] is event
            and last[1] is facts
            and last[2:] == key[2:]
        ):
            return self._parts
        conversation = event.conversation
        timing = {"createdAt": format_time(event.created_at), "sequence": delivery.sequence}
        if delivery.received is not None:
            timing["receivedAt"] = format_time(delivery.received)
        self._key = key
        self._parts = _Parts(
            _source(event),
            _conversation(conversation, str(conversation.kind), parent=True),
            _author(event, facts.author_agent),
            list(facts.mentions),
            _content(event, facts.signal),
            timing,
        )
        return self._parts


_SHARED = _SharedParts()


@lru_cache(maxsize=1024)
def _verdict(
    policy: Policy,
    reason: str,
    priority: Priority,
    deadline_ms: int | None,
    claimed_by: str | None,
    mode: InjectionMode,
    private: bool,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A delivery's `attention` and `injection`, which follow from the decision alone (and, for
    a turn, whether the conversation is private). Each is made once and shared by every message
    with the same verdict: nothing changes a message once it is built."""
    attention: dict[str, Any] = {
        "policy": policy.value,
        "reason": reason,
        "priority": priority.value,
    }
    if deadline_ms is not None:
        attention["deadlineMs"] = deadline_ms
    if claimed_by is not None:
        attention["claimedBy"] = f"agent:{claimed_by}"
    injection: dict[str, Any] = {"mode": mode.value, "role": "user"}
    if mode in _TURNS:
        # The harness pulls the surrounding thread window for anything said in public.
        injection["context"] = "message" if private else _THREAD_CONTEXT
    return attention, injection


def _conversation(conversation: Conversation, kind: str, *, parent: bool = False) -> dict[str, Any]:
    found: dict[str, Any] = {"id": conversation.id, "kind": kind}
    if conversation.thread_id is not None:
        found["threadId"] = conversation.thread_id
    if parent and conversation.parent_id is not None:
        found["parentId"] = conversation.parent_id
    return found


def _attachments(attachments: tuple[Attachment, ...]) -> list[dict[str, Any]]:
    """The files on the message as the wire lists them: never their URL, which is the host's
    to fetch from (`chat_read_file`)."""
    return [
        {"id": a.id, "name": a.name, "mimetype": a.mimetype, "size": a.size} for a in attachments
    ]


def _source(event: ChatEvent) -> dict[str, Any]:
    source: dict[str, Any] = {"platform": event.platform, "workspaceId": event.workspace_id}
    if event.message_id is not None:
        source["messageId"] = event.message_id
    return source


def _author(event: ChatEvent, agent: str | None) -> dict[str, Any]:
    author: dict[str, Any] = {"id": event.author.id, "kind": str(event.author.kind)}
    if event.author.display_name:
        author["displayName"] = event.author.display_name
    if agent is not None:
        author["agentId"] = agent
    return author


def _content(event: ChatEvent, signal: Signal | None) -> list[dict[str, Any]]:
    """The typed content of an event: text, a reaction, a membership change or a new thread."""
    kind = event.kind
    if kind is _MESSAGE or kind is _EDIT:
        return [{"type": "text", "text": event.text}]
    if kind in (EventKind.REACTION_ADDED, EventKind.REACTION_REMOVED):
        part: dict[str, Any] = {
            "type": "reaction",
            "action": "added" if kind is EventKind.REACTION_ADDED else "removed",
            "emoji": event.reaction or "",
            "messageId": event.message_id or "",
        }
        if signal is not None:
            part["signal"] = signal.value
        return [part]
    if kind in (EventKind.MEMBER_JOINED, EventKind.MEMBER_LEFT):
        action = "joined" if kind is EventKind.MEMBER_JOINED else "left"
        return [{"type": "membership", "action": action, "userId": event.user_id or ""}]
    if kind is EventKind.THREAD_CREATED:
        thread: dict[str, Any] = {"type": "thread", "threadId": event.conversation.id}
        if event.text:
            thread["name"] = event.text
        return [thread]
    return [{"type": "text", "text": event.text}]


def _knock(event: ChatEvent, decision: Decision, agent: str | None, topic: str) -> dict[str, Any]:
    """A knock says who, where and the host's topic; ids, never display names (a display name
    is text its owner chose)."""
    if agent is not None:
        principal = f"agent:{agent}"
    else:
        principal = f"{'bot' if event.author.kind is AuthorKind.BOT else 'human'}:{event.author.id}"
    conversation = event.conversation
    where = (
        f"thread:{conversation.thread_id}"
        if conversation.thread_id is not None
        else f"{conversation.kind.value}:{conversation.id}"
    )
    return {
        "from": principal,
        "where": where,
        "directedness": decision.directedness.value,
        "policy": decision.policy.value,
        "priority": decision.priority.value,
        "topic": topic,
        "pullWith": "chat_read_thread",
    }
