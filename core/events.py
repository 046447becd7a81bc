"""The normalised chat event: the one platform-free shape every adapter produces for the core.

Adapters turn native payloads into a `ChatEvent`; nothing here knows a platform's message ids,
user ids or wire opcodes beyond the opaque strings the adapters put into the fields. Each
adapter's package docstring says how its native ids fill them.

Identity rules (documented in docs/attention.md):

- `event_id` names what happened, not how it reached the host: `<platform>:...:<native id>`,
  the same whichever agent's connection delivered it and however often the platform retried.
- An edit is `<message event id>~<edit time>`, a delete `<message event id>~deleted`, a
  reaction `<message event id>+<user>:<emoji>` followed by `@<time>` where the platform gives one.
- `message_id` is always the native id of the message the event is about: an edit, delete or
  reaction carries the id of the message it changes.
- A payload that reports several changes at once (a bulk delete) is one event whose `batch`
  holds one event per change, each named as if it had arrived alone; the carrier itself is never
  put in the ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Final

from core.attachments import Attachment

__all__ = [
    "Author",
    "AuthorKind",
    "Broadcast",
    "ChatEvent",
    "Conversation",
    "ConversationKind",
    "EventKind",
    "Mentions",
]


class EventKind(StrEnum):
    """What happened."""

    MESSAGE = "message"
    EDIT = "edit"
    DELETE = "delete"
    REACTION_ADDED = "reaction_added"
    REACTION_REMOVED = "reaction_removed"
    TYPING = "typing"
    MEMBER_JOINED = "member_joined"
    MEMBER_LEFT = "member_left"
    THREAD_CREATED = "thread_created"


class ConversationKind(StrEnum):
    """Where it happened, in C2A's vocabulary."""

    DM = "dm"
    CHANNEL = "channel"
    THREAD = "thread"
    SYSTEM = "system"
    TOOL = "tool"


class AuthorKind(StrEnum):
    """Who did it, as far as the platform says; the core upgrades bound ids to `AGENT`."""

    HUMAN = "human"
    AGENT = "agent"
    BOT = "bot"


class Broadcast(StrEnum):
    """A mention of everyone present (here, the channel, everyone), however a platform writes it."""

    HERE = "here"
    CHANNEL = "channel"
    EVERYONE = "everyone"


@dataclass(slots=True, unsafe_hash=True)
class Conversation:
    """A place messages are posted.

    `id` is the platform channel id (for a thread that is a channel of its own, that channel's
    id). `thread_id` names the thread inside it (the root message's id, or the thread's channel
    id). `parent_id` is the channel a thread belongs to when the payload says. `group` marks a
    DM with more than two members.
    """

    id: Final[str]
    kind: Final[ConversationKind]
    thread_id: Final[str | None] = None
    parent_id: Final[str | None] = None
    group: Final[bool] = False

    @property
    def key(self) -> str:
        """A stable key for this conversation: the channel, plus the thread when there is one."""
        if self.thread_id is None or self.thread_id == self.id:
            return self.id
        return f"{self.id}/{self.thread_id}"

    @property
    def scope(self) -> str:
        """The channel whose membership decides who can see this conversation."""
        return self.parent_id or self.id


@dataclass(slots=True, unsafe_hash=True)
class Author:
    """The person, agent or bot behind an event.

    `id` is the platform user id. `external` marks someone from another organisation (a user of
    a shared channel).
    """

    id: Final[str]
    kind: Final[AuthorKind] = AuthorKind.HUMAN
    display_name: Final[str | None] = None
    external: Final[bool] = False


@dataclass(slots=True, unsafe_hash=True)
class Mentions:
    """Everyone a message names: user ids, role or user-group ids, and broadcasts."""

    users: Final[tuple[str, ...]] = ()
    roles: Final[tuple[str, ...]] = ()
    broadcast: Final[tuple[Broadcast, ...]] = ()

    def __bool__(self) -> bool:
        return bool(self.users or self.roles or self.broadcast)


@dataclass(slots=True)
class ChatEvent:
    """One normalised inbound event.

    `created_at` is the platform's time for the event (timezone-aware UTC) and orders events
    within a conversation. `reply_to` is the native id of the message this one answers (a reply
    reference). `target_author_id` is the author of the message a reply or reaction points at,
    when the payload carries it. `reaction` is the emoji as the platform names it
    (`+1::skin-tone-2`, `👍`); `user_id` of a membership event is whoever joined or left.
    `bot_user_id` is the platform user id of the bot whose connection received the payload,
    when the payload says. `delivery_id` is the platform's id for this delivery, for audit only.
    `content_withheld` says the platform kept the text from the connection that received it (a
    bot not allowed to read message content): `text` is empty, not the message.
    `names_receiver` says the platform sent the event only because it names the bot whose
    connection received it (a mention event), whatever user id the text carries.
    `files` counts the files on a message; `attachments` describes each one the payload
    describes (`core.attachments`).
    `also_in_channel` marks a thread reply that was also posted to its channel. A removal of a
    reaction with no author (`author.id` empty) is a moderator clearing reactions: every
    person's `reaction`, or every emoji when `reaction` is None. `batch` is set only on a
    carrier of several events (see the identity rules).

    Immutable through its `Final` fields, which mypy holds every assignment to; the class is
    not `frozen=True` because a frozen dataclass pays an `object.__setattr__` call per field
    on every construction, and one event is made for every payload. The same goes for the
    other values made on every event: its `Conversation`, `Author` and `Mentions` (which keep
    their hash, `unsafe_hash`, as nothing assigns to them), `Decision`, `Emission`, the rules'
    `Context`.
    """

    event_id: Final[str]
    kind: Final[EventKind]
    platform: Final[str]
    workspace_id: Final[str]
    conversation: Final[Conversation]
    author: Final[Author]
    created_at: Final[datetime]
    message_id: Final[str | None] = None
    text: Final[str] = ""
    mentions: Final[Mentions] = field(default_factory=Mentions)
    reply_to: Final[str | None] = None
    target_author_id: Final[str | None] = None
    reaction: Final[str | None] = None
    user_id: Final[str | None] = None
    subtype: Final[str | None] = None
    files: Final[int] = 0
    attachments: Final[tuple[Attachment, ...]] = ()
    bot_user_id: Final[str | None] = None
    delivery_id: Final[str | None] = None
    content_withheld: Final[bool] = False
    names_receiver: Final[bool] = False
    also_in_channel: Final[bool] = False
    batch: Final[tuple[ChatEvent, ...]] = ()
