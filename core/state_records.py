"""The records the engine's state keeps of what it has seen: messages (with their versions and
who had them), threads (who owns and follows them), a person's run of fragments, and the
questions that came late."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from sys import intern

from core.decision import Decision
from core.events import ChatEvent, Conversation

__all__ = [
    "Chain",
    "LateQuestion",
    "MessageRecord",
    "ThreadRecord",
    "kept_decision",
    "message_key",
    "message_of",
    "owned",
    "root_thread",
]


def message_key(platform: str, conversation_id: str, message_id: str) -> str:
    """The key of a native message: platform, channel and native id (an id may be per channel)."""
    return f"{platform}:{conversation_id}:{message_id}"


def message_of(event: ChatEvent) -> str | None:
    """The key of the message an event is about (`message_key`), if it is about one."""
    if event.message_id is None:
        return None
    return message_key(event.platform, event.conversation.id, event.message_id)


def kept_decision(decision: Decision, event: ChatEvent) -> Decision:
    """The decision as a message record keeps it. One read back from the ledger (a start, a
    repeat) has its own copies of the event id, the agent and the reason; kept per record
    they were half of its size, so it takes the event's id and one interned copy of each."""
    if decision.event_id is event.event_id:
        return decision  # decided in this process from this event: shared already
    event_id = event.event_id if decision.event_id == event.event_id else decision.event_id
    # Made directly: `dataclasses.replace` walks the fields generically, three times the cost,
    # once for every delivery a start reads back.
    return Decision(
        event_id=event_id,
        agent=intern(decision.agent),
        directedness=decision.directedness,
        policy=decision.policy,
        mode=decision.mode,
        reason=intern(decision.reason),
        priority=decision.priority,
        deadline_ms=decision.deadline_ms,
        claimed_by=decision.claimed_by,
        continues=decision.continues,
        supersedes=decision.supersedes,
    )


@dataclass(slots=True)
class MessageRecord:
    """A message the host has seen: who wrote it, where, and its latest version."""

    event_id: str
    latest: str
    author_id: str
    author_agent: str | None
    conversation: Conversation
    text: str
    deleted: bool = False
    reply_to: str | None = None  # the message it answers: an edit of it answers it too
    delivered: dict[str, Decision] = field(default_factory=dict)
    versions: list[str] = field(default_factory=list)
    answered: set[str] = field(default_factory=set)


@dataclass(slots=True)
class ThreadRecord:
    """A thread: who started it, which agent owns it, and who has posted in it."""

    root_author: str | None = None
    owner: str | None = None
    participants: set[str] = field(default_factory=set)
    agents: set[str] = field(default_factory=set)


def owned(thread: ThreadRecord) -> bool:
    """Whether an agent owns the thread (one the state keeps beyond the bound of the others)."""
    return thread.owner is not None


def root_thread(root: MessageRecord) -> ThreadRecord:
    """A thread as the message it hangs off starts it: its author in it, and owning it if an
    agent."""
    agents = {root.author_agent} if root.author_agent is not None else set()
    return ThreadRecord(root.author_id, root.author_agent, {root.author_id}, agents)


@dataclass(slots=True)
class Chain:
    """A person's run of fragments after a message directed at some agents (`root`, the event;
    `messages`, the keys of its messages, the first's and each fragment's)."""

    root: str
    started: datetime
    decisions: dict[str, Decision]
    messages: list[str] = field(default_factory=list)


@dataclass(slots=True)
class LateQuestion:
    """A question received late (`core.revisions.is_late`): where a reply can answer it (its
    conversation's id, its message id) and the agents it is still `must_respond` for."""

    conversation: str
    message_id: str | None
    agents: set[str] = field(default_factory=set)

    def within_reach(self, reply: ChatEvent) -> bool:
        """Whether `reply` could answer it at all: said in its conversation, or a reply
        reference to it (`core.revisions` decides whether it does)."""
        return reply.conversation.id == self.conversation or (
            self.message_id is not None and reply.reply_to == self.message_id
        )
