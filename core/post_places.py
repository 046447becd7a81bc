"""Where an agent's post may go (`core.engine_port`): only where the agent has been, and an
answer only where it was asked.

A post goes to a conversation the agent has seen something in. A reply goes where the message it
answers was posted (its channel, or the channel its thread is in): an answer elsewhere would
reach people who never asked, and leave the asker waiting. A post naming a thread names one the
agent has seen in that conversation, or a message there to start one under: a platform takes a
thread's id as given (a Discord thread is a channel of its own, so an id taken on trust could
name any channel the bot is in, and the answer would land there). A private post (a DM opened
from a channel, an ephemeral message) goes to someone the agent met there, as an author or a
person named in what it was shown: a platform opens a DM with anyone in the workspace, so a
message in a channel could otherwise have an agent write privately to people who never took
part.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from core.engine import Engine
from core.errors import ToolError
from core.events import ConversationKind
from core.state_records import message_key

__all__ = ["MET_WITHIN", "PostPlace", "check_met", "check_thread", "post_place"]

MET_WITHIN: Final = 1_000
"""How many of the newest events the agent was shown in a conversation a private post's person
is looked for in."""


@dataclass(frozen=True, slots=True)
class PostPlace:
    """What a post's place is: its platform, whether it is a DM, and who asked (the author of
    the message it answers, when it answers one)."""

    platform: str
    in_dm: bool
    asker: str | None = None


async def post_place(
    engine: Engine, agent: str, conversation: str, in_reply_to: str | None
) -> PostPlace:
    """The place of a post to `conversation` answering `in_reply_to` (or nothing), from what
    `agent` has seen there; ToolError when it has seen nothing there, or when the message it
    answers was posted elsewhere."""
    if in_reply_to is not None:
        event = await engine.event(in_reply_to)
        if event is not None:
            place = event.conversation
            if conversation not in (place.id, place.parent_id):
                raise ToolError(
                    f"refused: {in_reply_to} was posted in {place.id}; a reply to it goes "
                    f"there, not in {conversation}"
                )
            in_dm = place.kind is ConversationKind.DM
            return PostPlace(event.platform, in_dm, event.author.id)
    seen = await engine.store.seen_by(agent, conversation=conversation, limit=1)
    if not seen:
        raise ToolError(f"you have seen nothing in conversation {conversation!r}")
    data = seen[0][0].data
    in_dm = data["conversation"]["kind"] == ConversationKind.DM
    return PostPlace(str(data["platform"]), in_dm)


async def check_thread(
    engine: Engine, agent: str, platform: str, conversation: str, thread: str | None
) -> None:
    """Refuses (ToolError) a `thread` of `conversation` that `agent` has seen nothing of: not a
    thread it was shown a message of, there or as a channel of its own whose parent is there,
    nor a message there to start one under."""
    if thread is None:
        return
    store = engine.store
    shown = [
        *await store.seen_by(agent, conversation=conversation, thread=thread, limit=1),
        *await store.seen_by(agent, conversation=thread, limit=1),
    ]
    for entry, _ in shown:
        place = entry.data["conversation"]
        if place.get("thread_id") == thread and conversation in (
            place["id"],
            place.get("parent_id"),
        ):
            return
    held = engine.state.messages.get(message_key(platform, conversation, thread))
    if held is not None or await store.message_events(platform, conversation, thread):
        return
    raise ToolError(
        f"refused: you have seen no thread or message {thread!r} in {conversation}; name a "
        "thread you were shown there (the conversation's threadId), or leave thread out"
    )


async def check_met(
    engine: Engine, agent: str, conversation: str, person: str | None, asker: str | None
) -> None:
    """Refuses (ToolError) a private post's `person` (`core.guards.check_audience`) whom
    `agent` has not met in `conversation`: neither the asker of the message it answers nor
    anyone among the `MET_WITHIN` newest events it was shown there, as their author or a
    person they mention."""
    if person is None or person == asker:
        return
    seen = await engine.store.seen_by(agent, conversation=conversation, limit=MET_WITHIN)
    for entry, _ in seen:
        data = entry.data
        if data["author"]["id"] == person or person in data.get("mentions", {}).get("users", ()):
            return
    raise ToolError(
        f"refused: you have not met user:{person} in {conversation}; a private post "
        "goes to someone who wrote there or was named in what you were shown"
    )
