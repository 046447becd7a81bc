"""The messages an agent sent, found by the key it sent them under: what its tools may edit,
delete or ask about (`core.engine_port`), and where each landed.

A key is looked up as the agent's own (`core.guards.own_key`: as it chose it, or as returned)
and as given (a key the host made for it); an entry of another agent is never found.
"""

from __future__ import annotations

from typing import TypedDict

from core.action_records import from_record
from core.actions import Post
from core.errors import ToolError
from core.guards import own_key
from core.store import OutboxEntry, OutboxStore

__all__ = ["Landed", "landed_message", "message_id", "sent_by"]


class Landed(TypedDict):
    """Where a message the agent sent landed: what an edit or a delete of it names."""

    agent: str
    platform: str
    conversation: str
    thread: str | None
    message_id: str


async def sent_by(outbox: OutboxStore, agent: str, key: str) -> OutboxEntry | None:
    """`agent`'s outbox entry under `key`, or None."""
    for stored in dict.fromkeys((own_key(agent, key), key)):
        entry = await outbox.outbox_get(stored)
        if entry is not None and entry.agent == agent:
            return entry
    return None


async def landed_message(outbox: OutboxStore, agent: str, key: str) -> tuple[str, Post, Landed]:
    """A message `agent` sent that has landed: its outbox key, the post, and where it landed.
    ToolError when there is none under `key`, or it is not posted yet."""
    entry = await sent_by(outbox, agent, key)
    if entry is None or entry.action.get("action") != "send":
        raise ToolError(f"you sent no message with idempotency key {key!r}")
    posted = message_id(entry)
    if entry.status != "sent" or not posted:
        raise ToolError(f"message {key!r} has not been posted yet ({entry.status}); try later")
    original = from_record(entry.action)
    assert isinstance(original, Post)  # its record says `send`
    landed = Landed(
        agent=agent,
        platform=original.platform,
        conversation=original.conversation,
        thread=original.thread,
        message_id=posted,
    )
    return entry.key, original, landed


def message_id(entry: OutboxEntry) -> str | None:
    """The platform's id of the message an entry posted, once it has."""
    posted = (entry.result or {}).get("messageId")
    return str(posted) if posted else None
