"""What an agent may do in chat, as one small seam: the `AgentPort` Protocol and its values.

The harness bridge offers these operations to a model (as `tools/call` over the link, an MCP
server, function tools) and speaks no rule of its own: whether an agent may answer, react,
claim or post at all is decided behind this port, in core (`core.engine_port.EnginePort`,
with the rules in `core.guards`). Arguments and results are plain typed values; a refusal is a
`ToolError` whose message tells the model why, raised having done nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from core.actions import Visibility
from core.approvals import Verdict
from core.asking import Approval
from core.attachments import Attachment
from core.clock import Clock
from core.decision import Directedness, Disposition, Policy
from core.file_reading import FileContent
from core.post_files import PostFile
from core.signals import Signal
from core.store import ClaimResult

__all__ = [
    "AgentPort",
    "EventFilter",
    "EventView",
    "FileContent",
    "MessageState",
    "Outgoing",
    "PostFile",
    "Queued",
    "ToolCall",
    "TurnEvent",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class EventFilter:
    """Which delivered events to list: in `conversation`, with `policy`, before the ledger's
    `before_sequence`, at most `limit` (the newest)."""

    conversation: str | None = None
    policy: Policy | None = None
    before_sequence: int | None = None
    limit: int = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class EventView:
    """An event as its agent may see it: the ledger's record of it (`conversation` and
    `author` as the ledger holds them; `text` empty once the message was deleted; the files
    on it, `attachments`; `message_id`, the platform's id of the message it is about, which
    a message shares with its edits) and what the host decided for this agent."""

    event_id: str
    sequence: int
    kind: str
    conversation: Mapping[str, Any]
    author: Mapping[str, Any]
    created_at: str
    text: str
    deleted: bool
    directedness: Directedness
    policy: Policy
    reason: str
    disposition: Disposition | None
    attachments: tuple[Attachment, ...] = ()
    message_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Outgoing:
    """A message an agent sends to `conversation` (and `thread`), in reply to the event
    `in_reply_to` or to nothing. `key` is the idempotency key (None: derived from the message,
    so a retry gets the same one). `recipients` are whom a `to_me`/`to_my_role` post obliges
    (`agent:<id>`, `role:<name>`, `user:<platform id>`). `also_answers` are events the same
    message answers besides `in_reply_to` (a turn's final text, owed to several). `files` go
    with it, within `core.post_files`'s limits; with none, an answer too long for the
    platform's messages goes as a file with a summary (`core.post_files.long_answer`). `writing`
    marks the first words of a reply the host is still drawing (`core.drafts`); a model's own
    send never is."""

    conversation: str
    text: str
    thread: str | None = None
    in_reply_to: str | None = None
    key: str | None = None
    visibility: Visibility = "thread"
    directedness: Directedness = Directedness.AMBIENT
    recipients: tuple[str, ...] = ()
    also_answers: tuple[str, ...] = ()
    files: tuple[PostFile, ...] = ()
    writing: bool = False


@dataclass(frozen=True, slots=True)
class Queued:
    """An outbound action under its idempotency key: `new` when this call queued it, False
    when the key was already there (a retry, which does nothing)."""

    key: str
    new: bool


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as the audit log keeps it: the tool, its arguments as the model wrote
    them, `ok` or `refused`, and the result or the refusal's reason."""

    tool: str
    arguments: Mapping[str, Any] | None
    outcome: str
    result: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class MessageState:
    """Where a message the agent sent stands in the outbox (`pending`, `sending`, `sent`,
    `failed`, ...), its platform id once it has landed, and the thread it landed in when the
    platform placed it in one."""

    status: str
    message_id: str | None
    thread: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnEvent:
    """One event of a turn as the working indicator needs it: where it was said (`platform`,
    `conversation` of `conversation_kind`, `thread`), its message, and the policy it came with."""

    event_id: str
    platform: str
    conversation: str
    conversation_kind: str
    policy: Policy
    thread: str | None = None
    message_id: str | None = None


class AgentPort(Protocol):
    """Everything one agent (`agent`) may do in chat, and what its harness needs around a turn.

    An implementation guarantees: every reply, reaction, claim and disposition passes the
    host's guards (the policy, another agent's claim, `ack_only`, a second answer, the send
    budget, known recipients), and a refused call raises `ToolError` having queued and recorded
    nothing; every outbound action goes into the outbox under its idempotency key, redacted,
    so a retried call never makes a second visible message; reads show only what was delivered
    to this agent."""

    @property
    def agent(self) -> str: ...

    @property
    def clock(self) -> Clock:
        """The host's clock, for a backend that times turns."""
        ...

    @property
    def answer_parts(self) -> int:
        """How many messages an answer may take before it goes as a file with a summary."""
        ...

    # reading
    async def list_events(self, which: EventFilter) -> list[EventView]:
        """The events delivered to the agent that `which` selects, oldest first."""
        ...

    async def read_thread(
        self, conversation: str, *, thread: str | None = None, limit: int = 50
    ) -> list[EventView]:
        """What was said in a conversation or thread, as delivered to the agent."""
        ...

    async def read_file(self, event_id: str, file_id: str) -> FileContent:
        """A file on a message delivered to the agent, fetched with its bot's credentials,
        within the workspace's size limit (`core.file_reading`)."""
        ...

    # acting
    async def send(self, message: Outgoing) -> Queued:
        """Post `message`; answering the event it replies to (and `also_answers`)."""
        ...

    async def react(self, in_reply_to: str, signal: Signal, *, eta: str | None = None) -> Queued:
        """Put a typed signal on an event's message; what it records depends on the policy."""
        ...

    async def claim(self, event_id: str) -> ClaimResult:
        """Take responsibility for an event; of racing claims one wins."""
        ...

    async def defer(self, event_id: str, reason: str, *, eta: str | None = None) -> Disposition:
        """Accept an event but answer later."""
        ...

    async def resolve(self, event_id: str, note: str | None = None) -> Disposition:
        """Mark an event answered."""
        ...

    async def leave(self, conversation: str, thread: str | None = None) -> str:
        """Leave a conversation or thread until named there again; returns the place left."""
        ...

    async def edit(self, key: str, text: str, *, draft: int | None = None) -> Queued:
        """New text for the agent's posted message sent under `key`; `draft` numbers a redraw
        of a reply still being written (shown, never recorded as an edit)."""
        ...

    async def delete(self, key: str) -> Queued:
        """Remove the agent's posted message sent under `key`."""
        ...

    async def message(self, key: str) -> MessageState | None:
        """The outbox state of the agent's message sent under `key`; None if there is none."""
        ...

    # around a turn
    async def owed(self, event_ids: Sequence[str]) -> list[str]:
        """Those of `event_ids`, in order, that still owe the agent's visible answer."""
        ...

    async def final_reply(self, event_ids: Sequence[str], text: str) -> Outgoing | None:
        """The message a turn's final `text` is: in reply to the last event still owed, in its
        place, also answering the others owed there. None when nothing is owed or the text
        is blank."""
        ...

    async def unsettled(self, event_ids: Sequence[str]) -> list[str]:
        """Those of `event_ids` the agent has not settled (answered, claimed, deferred...)."""
        ...

    async def superseded(self, event_ids: Sequence[str]) -> list[str]:
        """Those of `event_ids` that ended for the agent since it was told of them: edited,
        deleted, handed over, or answered by another agent (`superseded`)."""
        ...

    async def fail(self, event_ids: Sequence[str], reason: str) -> list[str]:
        """Record `failed` with `reason` on those of `event_ids` still unsettled; returns them."""
        ...

    async def working(self, events: Sequence[TurnEvent], on: bool) -> None:
        """Show (`on`) or clear the working indicator on those of a turn's `events` it may
        answer; it never records a disposition."""
        ...

    async def progress(self, events: Sequence[TurnEvent], note: str, step: str) -> None:
        """Keep the working indicator up while a long turn works, saying on what (`note`); each
        `step`, unique within the turn, is one outbound action."""
        ...

    async def ask(self, approval: Approval) -> Verdict:
        """Ask the agent's approvers in chat for leave to do something, and wait for the
        answer (`core.asking`); a refusal when nobody answers in time."""
        ...

    async def record_call(self, call: ToolCall) -> None:
        """Keep one tool call in the audit log (message text as its length only, redacted)."""
        ...

    def mark_available(self) -> None:
        """The agent's harness is up."""
        ...

    def mark_unavailable(self) -> None:
        """The agent's harness is down: people waiting on it are told."""
        ...
