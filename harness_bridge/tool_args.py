"""The chat tools' arguments: one pydantic model per tool, which is its wire JSON Schema (by
its camelCase aliases) and its description (the model's docstring), and `parsed`, which reads a
call's arguments by it. `harness_bridge.tools` runs the calls.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from core.decision import Directedness, Policy
from core.errors import ToolError
from core.post_files import MAX_FILE_BYTES, MAX_FILES
from core.redact import well_formed_data
from core.signals import Signal

__all__ = [
    "ARGS",
    "MAX_MESSAGE_CHARS",
    "TOOL_NAMES",
    "Args",
    "Claim",
    "Defer",
    "DeleteMessage",
    "EditMessage",
    "Leave",
    "ListEvents",
    "React",
    "ReadFile",
    "ReadThread",
    "Resolve",
    "SendMessage",
    "parsed",
]

MAX_MESSAGE_CHARS: Final = 40_000
"""The most characters of text a message sent or edited through the tools may have (the
largest any platform takes); a longer answer goes as a file (`core.post_files.long_answer`)."""


class Args(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ListEvents(Args):
    """List chat events delivered to you, newest last; filter by conversation or policy."""

    conversation: str | None = None
    policy: Policy | None = None
    before_sequence: int | None = None
    limit: int = Field(default=20, ge=1, le=200)


class ReadThread(Args):
    """Read a conversation or one thread of it (the text of deleted messages is gone)."""

    conversation: str
    thread: str | None = None
    limit: int = Field(default=50, ge=1, le=200)


class Target(Args):
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


class ReadFile(Args):
    """Read a file attached to a message delivered to you, by the event's id and the file's
    id as the delivery lists it: text comes back as text, an image as base64; files above the
    workspace's size limit, and other kinds, are refused."""

    event_id: str
    file_id: str


class File(Args):
    """A text file to attach: its name (no path) and its content."""

    name: str = Field(min_length=1, max_length=255)
    content: str = Field(max_length=MAX_FILE_BYTES)


class SendMessage(Args):
    """Send a chat message, idempotently. Mention (directedness to_me, exactly one recipient)
    only to create an obligation; post without recipients to share context. Attach up to 4
    text files (`files`, each at most 1 MB); an answer too long for a few messages is sent
    as a file with a summary by itself."""

    target: Target
    text: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    in_reply_to: str | None = None
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)
    visibility: Literal["dm", "thread", "channel", "ephemeral"] = "thread"
    directedness: Directedness = Directedness.AMBIENT
    recipients: list[str] = Field(default_factory=list, max_length=20)
    files: list[File] = Field(default_factory=list, max_length=MAX_FILES)


class React(Args):
    """Answer with a typed reaction signal instead of a message (a zero-turn disposition)."""

    in_reply_to: str
    signal: Signal
    eta: str | None = None


class Claim(Args):
    """Claim responsibility for an event before a substantive reply."""

    event_id: str


class Defer(Args):
    """Accept a must-respond event but answer later, saying why."""

    event_id: str
    reason: str = Field(min_length=1, max_length=2000)
    eta: str | None = None


class Resolve(Args):
    """Mark an event resolved."""

    event_id: str
    note: str | None = None


class EditMessage(Args):
    """Change the text of a message you sent, named by the idempotency key it was sent with."""

    idempotency_key: str
    text: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)  # as much as a send


class DeleteMessage(Args):
    """Delete a message you sent, named by the idempotency key it was sent with."""

    idempotency_key: str


class Leave(Args):
    """Leave a channel or thread you were asked to leave; you return only when mentioned."""

    conversation: str
    thread: str | None = None


ARGS: dict[str, type[Args]] = {
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
    "chat_read_file": ReadFile,
}
TOOL_NAMES: tuple[str, ...] = tuple(ARGS)
A = TypeVar("A", bound=Args)


def parsed(name: str, model: type[A], arguments: dict[str, Any] | None) -> A:
    """The call's arguments read by its schema, their text made storable first (a model may
    write a lone `\\ud800` escape: it is replaced, not refused); ToolError naming each
    problem."""
    try:
        return model.model_validate(well_formed_data(arguments or {}))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        raise ToolError(f"invalid arguments for {name}: {problems}") from None
