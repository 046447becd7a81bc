"""What the host says to people in an agent's name where the agent itself cannot: that its
harness is down, that no answer came, that a loop of agents stopped (`core.followup` says them,
once each, under their keys). Pure: the words, the post that carries them, and how to know them
again, so a harness leaves them out of what its model reads as the agent's own lines.
"""

from __future__ import annotations

from core.actions import Post
from core.events import ChatEvent, ConversationKind

__all__ = ["UNANSWERED", "UNAVAILABLE", "is_notice", "loop_stopped", "notice"]

UNAVAILABLE = (
    "I can't answer right now: the assistant behind me is not running. Your message is kept "
    "and will be answered when it is back."
)
UNANSWERED = (
    "Sorry: I have not managed to answer this. You may want to ask again, or ask someone else."
)
_LOOP = (
    "Stopping here: we agents have answered each other {rounds} times without a person. "
    "Reply if you want us to go on."
)


def loop_stopped(rounds: int) -> str:
    """The words for a loop of agents stopped after `rounds` lines with no person."""
    return _LOOP.format(rounds=rounds)


def is_notice(text: str) -> bool:
    """Whether `text` is one of these notices."""
    head, _, tail = _LOOP.partition("{rounds}")
    return text in (UNAVAILABLE, UNANSWERED) or (text.startswith(head) and text.endswith(tail))


def notice(agent: str, event: ChatEvent, key: str, text: str, *, reply: bool = True) -> Post:
    """`text` posted by `agent` where `event` was said (privately in a direct message), in
    reply to it unless `reply` is False, under the idempotency key `key`."""
    return Post(
        agent=agent,
        platform=event.platform,
        conversation=event.conversation.id,
        key=key,
        text=text,
        thread=event.conversation.thread_id,
        visibility="dm" if event.conversation.kind is ConversationKind.DM else "thread",
        in_reply_to=event.event_id if reply else None,
    )
