"""The records the engine's state keeps of what it has seen: messages (with their versions and
who had them), threads (who owns and follows them) and a person's run of fragments."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from core.decision import Decision
from core.events import Conversation

__all__ = ["Chain", "MessageRecord", "ThreadRecord", "message_key"]


def message_key(platform: str, conversation_id: str, message_id: str) -> str:
    """The key of a native message: platform, channel and native id (an id may be per channel)."""
    return f"{platform}:{conversation_id}:{message_id}"


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


@dataclass(slots=True)
class Chain:
    """A person's run of fragments after a message directed at some agents."""

    root: str
    started: datetime
    decisions: dict[str, Decision]
