"""Builds the JSON-RPC messages the host sends a harness: `chat/deliver`, cancellations, typing.

Plain dicts are built here for speed; `core.wire` holds the pydantic models that describe (and
in the tests validate) exactly these shapes. Nothing in a knock is taken from message text.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import lru_cache
from typing import Any

from core.clock import format_time
from core.decision import Decision, Directedness, InjectionMode, Policy, Priority
from core.events import AuthorKind, ChatEvent, ConversationKind, EventKind
from core.intent import Intent, topic
from core.manifest import Workspace
from core.signals import GlyphMap
from core.wire import (
    LATE_AFTER,
    METHOD_CANCELLED,
    METHOD_DELIVER,
    METHOD_TYPING,
    compact_policy,
)

__all__ = ["cancelled", "deliver", "shared_params", "typing"]

_THREAD_CONTEXT = "thread_window"
CONTENT_UNAVAILABLE = "a message whose content is unavailable (the platform withheld the text)"
_WITHHELD = (InjectionMode.NOTIFY,)
_TURNS = (InjectionMode.BUFFERED, InjectionMode.IMMEDIATE)
# Reading an enum member off its class costs a lookup on every use; the hot paths read these.
_MESSAGE, _EDIT = EventKind.MESSAGE, EventKind.EDIT
_DM = ConversationKind.DM
_TO_ME, _MUST_NOT = Directedness.TO_ME, Policy.MUST_NOT_RESPOND


def shared_params(
    event: ChatEvent,
    seq: int,
    workspace: Workspace,
    glyphs: GlyphMap,
    received: datetime | None = None,
) -> dict[str, Any]:
    """The parts of `chat/deliver` that are the same for every agent, built once per event;
    `received`, when the host received it, goes in `timing.receivedAt` if the event is late.

    (On this path and in `deliver`, `str()` of a StrEnum member gives its value several times
    faster than `.value` does.)"""
    conversation = event.conversation
    conv: dict[str, Any] = {"id": conversation.id, "kind": str(conversation.kind)}
    if conversation.thread_id is not None:
        conv["threadId"] = conversation.thread_id
    if conversation.parent_id is not None:
        conv["parentId"] = conversation.parent_id
    author: dict[str, Any] = {"id": event.author.id, "kind": str(event.author.kind)}
    if event.author.display_name:
        author["displayName"] = event.author.display_name
    author_agent = workspace.agent_for(event.platform, event.author.id)
    if author_agent is not None:
        author["agentId"] = author_agent
    source: dict[str, Any] = {"platform": event.platform, "workspaceId": event.workspace_id}
    if event.message_id is not None:
        source["messageId"] = event.message_id
    timing = {"createdAt": format_time(event.created_at), "sequence": seq}
    if received is not None and received - event.created_at > LATE_AFTER:
        timing["receivedAt"] = format_time(received)
    return {
        "eventId": event.event_id,
        "source": source,
        "conversation": conv,
        "author": author,
        "mentions": mention_tokens(event, workspace),
        "content": content_parts(event, glyphs),
        "timing": timing,
    }


def deliver(
    event: ChatEvent,
    decision: Decision,
    shared: dict[str, Any],
    workspace: Workspace,
    intents: Callable[[], frozenset[Intent]],
    *,
    compact: bool = False,
    attempt: int = 1,
) -> dict[str, Any]:
    """The `chat/deliver` request for one decision (spec 000's envelope; with `compact`, also
    spec 001's `addressedToMe`, `policy` and plain-text `content`, parts in `contentParts`).
    `shared` comes from `shared_params` for the same event; `intents` reads the event's intents,
    which only a knock's topic needs."""
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
    withheld = decision.mode in _WITHHELD
    parts = [] if withheld else shared["content"]
    target: dict[str, Any] = {
        "mentions": shared["mentions"],
        "directedness": str(decision.directedness),
    }
    recipient = _recipient(event, decision, workspace)
    if recipient is not None:
        target["recipient"] = recipient
    params: dict[str, Any] = {
        "eventId": shared["eventId"],
        "source": shared["source"],
        "conversation": shared["conversation"],
        "author": shared["author"],
        "target": target,
        "content": parts,
        "timing": shared["timing"],
        "attention": attention,
        "injection": injection,
        "reliability": {"attempt": attempt, "idempotencyKey": decision.idempotency_key},
    }
    if decision.supersedes is not None:
        params["supersedes"] = decision.supersedes
    if decision.continues is not None:
        params["continues"] = decision.continues
    if withheld:
        params["knock"] = {
            "from": _principal(event, workspace),
            "where": _where(event),
            "directedness": decision.directedness.value,
            "policy": decision.policy.value,
            "priority": decision.priority.value,
            "topic": CONTENT_UNAVAILABLE
            if event.content_withheld
            else topic(intents(), has_files=event.files > 0, is_reply=event.reply_to is not None)
            if event.kind in (EventKind.MESSAGE, EventKind.EDIT)
            else _event_topic(event),
            "pullWith": "chat_read_thread",
        }
    if compact:
        params["addressedToMe"] = decision.directedness is Directedness.TO_ME
        params["policy"] = compact_policy(decision.policy)
        params["contentParts"] = parts
        params["content"] = "" if withheld else event.text
    return {
        "jsonrpc": "2.0",
        "id": f"deliver:{shared['timing']['sequence']}:{decision.agent}:{attempt}",
        "method": METHOD_DELIVER,
        "params": params,
    }


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
    with the same verdict, as `shared_params` parts are by one event's messages: nothing
    changes a message once it is built."""
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


def cancelled(event_id: str, reason: str, request_id: str | None = None) -> dict[str, Any]:
    """`notifications/cancelled` for an event that was deleted, superseded, claimed, ..."""
    params: dict[str, Any] = {"eventId": event_id, "reason": reason}
    if request_id is not None:
        params["requestId"] = request_id
    return {"jsonrpc": "2.0", "method": METHOD_CANCELLED, "params": params}


def typing(event: ChatEvent, until: str) -> dict[str, Any]:
    """`notifications/typing`: someone is composing in a conversation until about `until`."""
    conversation = event.conversation
    conv: dict[str, Any] = {"id": conversation.id, "kind": conversation.kind.value}
    if conversation.thread_id is not None:
        conv["threadId"] = conversation.thread_id
    return {
        "jsonrpc": "2.0",
        "method": METHOD_TYPING,
        "params": {"conversation": conv, "authorId": event.author.id, "until": until},
    }


def content_parts(event: ChatEvent, glyphs: GlyphMap) -> list[dict[str, Any]]:
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
        signal = glyphs.signal_for(event.platform, event.reaction or "")
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


def mention_tokens(event: ChatEvent, workspace: Workspace) -> list[str]:
    """Mentions in C2A form: `agent:<id>`, `user:<platform id>`, `role:<name>`,
    `group:<platform id>` for an unbound group, `broadcast:<here|channel|everyone>`."""
    if not event.mentions:
        return []
    platform = event.platform
    tokens: list[str] = []
    for user in event.mentions.users:
        agent = workspace.agent_for(platform, user)
        tokens.append(f"agent:{agent}" if agent else f"user:{user}")
    for group in event.mentions.roles:
        roles = workspace.roles_named(platform, (group,))
        owner = next(
            (a for a in workspace.agent_ids if workspace.managed_role(platform, a) == group), None
        )
        if owner is not None:
            tokens.append(f"agent:{owner}")
        tokens.extend(f"role:{role}" for role in roles)
        if not roles and owner is None:
            tokens.append(f"group:{group}")
    tokens.extend(f"broadcast:{b.value}" for b in event.mentions.broadcast)
    return tokens


def _recipient(event: ChatEvent, decision: Decision, workspace: Workspace) -> str | None:
    if decision.directedness is _TO_ME:
        return f"agent:{decision.agent}"
    if decision.reason == "role_mention":
        roles = workspace.roles_named(event.platform, event.mentions.roles)
        mine = [r for r in roles if decision.agent in workspace.agents_by_role.get(r, ())]
        return f"role:{mine[0]}" if mine else None
    if decision.claimed_by is not None and decision.policy is not _MUST_NOT:
        return f"agent:{decision.claimed_by}"
    return None


def _principal(event: ChatEvent, workspace: Workspace) -> str:
    agent = workspace.agent_for(event.platform, event.author.id)
    if agent is not None:
        return f"agent:{agent}"
    # Ids, not display names: a display name is text its owner chose, so it stays out of knocks.
    prefix = "bot" if event.author.kind is AuthorKind.BOT else "human"
    return f"{prefix}:{event.author.id}"


def _where(event: ChatEvent) -> str:
    conversation = event.conversation
    if conversation.thread_id is not None:
        return f"thread:{conversation.thread_id}"
    return f"{conversation.kind.value}:{conversation.id}"


def _event_topic(event: ChatEvent) -> str:
    if event.kind in (EventKind.REACTION_ADDED, EventKind.REACTION_REMOVED):
        return "a reaction on your message"
    if event.kind is EventKind.THREAD_CREATED:
        return "a new thread"
    return "a membership change"
