"""Turns a `ChatEvent` into the ledger's JSON `data` and back, losslessly and fast."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from core.attachments import attachments_from_data, attachments_to_data
from core.clock import isoformat
from core.events import (
    Author,
    AuthorKind,
    Broadcast,
    ChatEvent,
    Conversation,
    ConversationKind,
    EventKind,
    Mentions,
)

__all__ = ["LEDGER_KINDS", "event_from_data", "event_to_data"]

E = TypeVar("E", bound=StrEnum)

LEDGER_KINDS: dict[EventKind, str] = {
    EventKind.MESSAGE: "chat.message",
    EventKind.EDIT: "x.c2a.edit",
    EventKind.DELETE: "x.c2a.delete",
    EventKind.REACTION_ADDED: "chat.reaction",
    EventKind.REACTION_REMOVED: "x.c2a.reaction_removed",
    EventKind.TYPING: "x.c2a.typing",
    EventKind.MEMBER_JOINED: "x.c2a.member_joined",
    EventKind.MEMBER_LEFT: "x.c2a.member_left",
    EventKind.THREAD_CREATED: "x.c2a.thread_created",
}


def event_to_data(event: ChatEvent) -> dict[str, Any]:
    """The event as a JSON-ready dict; empty optional fields are left out."""
    # `str()` of a StrEnum member is its value, read several times faster than `.value`.
    conversation = event.conversation
    conv: dict[str, Any] = {"id": conversation.id, "kind": str(conversation.kind)}
    if conversation.thread_id is not None:
        conv["thread_id"] = conversation.thread_id
    if conversation.parent_id is not None:
        conv["parent_id"] = conversation.parent_id
    if conversation.group:
        conv["group"] = True
    author: dict[str, Any] = {"id": event.author.id, "kind": str(event.author.kind)}
    if event.author.display_name is not None:
        author["display_name"] = event.author.display_name
    if event.author.external:
        author["external"] = True
    data: dict[str, Any] = {
        "event_id": event.event_id,
        "kind": str(event.kind),
        "platform": event.platform,
        "workspace_id": event.workspace_id,
        "conversation": conv,
        "author": author,
        "created_at": isoformat(event.created_at),
        "text": event.text,
    }
    mentions = event.mentions
    if mentions:
        data["mentions"] = {
            "users": list(mentions.users),
            "roles": list(mentions.roles),
            "broadcast": [b.value for b in mentions.broadcast],
        }
    for name in (
        "message_id",
        "reply_to",
        "target_author_id",
        "reaction",
        "user_id",
        "subtype",
        "bot_user_id",
        "delivery_id",
    ):
        value = getattr(event, name)
        if value is not None:
            data[name] = value
    if event.files:
        data["files"] = event.files
    if event.attachments:
        data["attachments"] = attachments_to_data(event.attachments)
    for flag in ("content_withheld", "names_receiver", "also_in_channel"):
        if getattr(event, flag):
            data[flag] = True
    return data


def _members(kind: type[E]) -> dict[str, E]:
    """`kind`'s members by value: a dict lookup, where calling the enum class goes through its
    metaclass (three times an event read back)."""
    return {str(member): member for member in kind}


_EVENT_KINDS = _members(EventKind)
_CONVERSATION_KINDS = _members(ConversationKind)
_AUTHOR_KINDS = _members(AuthorKind)
_NO_MENTIONS = Mentions()  # immutable, so every event without mentions shares one


def event_from_data(data: dict[str, Any]) -> ChatEvent:
    """The inverse of `event_to_data`. A value no member has is refused by its enum as before."""
    conv = data["conversation"]
    author = data["author"]
    mentions = data.get("mentions")
    kind, conv_kind, author_kind = data["kind"], conv["kind"], author["kind"]
    attachments = data.get("attachments")
    return ChatEvent(
        event_id=data["event_id"],
        kind=_EVENT_KINDS.get(kind) or EventKind(kind),
        platform=data["platform"],
        workspace_id=data["workspace_id"],
        conversation=Conversation(
            id=conv["id"],
            kind=_CONVERSATION_KINDS.get(conv_kind) or ConversationKind(conv_kind),
            thread_id=conv.get("thread_id"),
            parent_id=conv.get("parent_id"),
            group=conv.get("group", False),
        ),
        author=Author(
            id=author["id"],
            kind=_AUTHOR_KINDS.get(author_kind) or AuthorKind(author_kind),
            display_name=author.get("display_name"),
            external=author.get("external", False),
        ),
        created_at=datetime.fromisoformat(data["created_at"]),
        message_id=data.get("message_id"),
        text=data.get("text", ""),
        mentions=Mentions(
            users=tuple(mentions["users"]),
            roles=tuple(mentions["roles"]),
            broadcast=tuple(Broadcast(b) for b in mentions["broadcast"]),
        )
        if mentions
        else _NO_MENTIONS,
        reply_to=data.get("reply_to"),
        target_author_id=data.get("target_author_id"),
        reaction=data.get("reaction"),
        user_id=data.get("user_id"),
        subtype=data.get("subtype"),
        files=data.get("files", 0),
        attachments=attachments_from_data(attachments) if attachments else (),
        bot_user_id=data.get("bot_user_id"),
        delivery_id=data.get("delivery_id"),
        content_withheld=data.get("content_withheld", False),
        names_receiver=data.get("names_receiver", False),
        also_in_channel=data.get("also_in_channel", False),
    )
