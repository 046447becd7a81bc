"""A host-written topic for a message, from its intents alone: what a knock or a digest says.

The topic names what a message is (`a blocker report`, `an urgent question in reply`) and never
repeats a word of it, so it is safe where untrusted text must not reach a model unfenced.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from core.intent_tables import Intent

__all__ = ["TOPIC_PRIORITY", "topic"]

# Highest first: a control request (leave, stop) changes what the agent does at all; then what
# blocks or approves work, new work, questions, broadcasts; thanks last. Urgency is a modifier.
TOPIC_PRIORITY: tuple[Intent, ...] = (
    Intent.LEAVE,
    Intent.STOP,
    Intent.BLOCKER,
    Intent.APPROVAL,
    Intent.ASSIGNMENT,
    Intent.QUESTION,
    Intent.STATUS,
    Intent.THANKS,
)

_TOPIC: Mapping[Intent, tuple[str, str]] = MappingProxyType(
    {
        Intent.LEAVE: ("a", "request to leave"),
        Intent.STOP: ("a", "request to stop"),
        Intent.BLOCKER: ("a", "blocker report"),
        Intent.APPROVAL: ("an", "approval"),
        Intent.ASSIGNMENT: ("an", "assignment"),
        Intent.QUESTION: ("a", "question"),
        Intent.STATUS: ("a", "status update"),
        Intent.THANKS: ("", "thanks or an acknowledgement"),
    }
)


def topic(intents: frozenset[Intent], *, has_files: bool = False, is_reply: bool = False) -> str:
    """A short, host-written description of a message, built only from its intents and flags.

    Never contains a word of the message, so it is safe in a notify knock. The first intent in
    `TOPIC_PRIORITY` names the message; `URGENT` makes it "an urgent ..." (alone, "an urgent
    request"); no intent is "a message" ("a reply" when `is_reply`). " in reply" is appended for
    a reply with intents, " with attachments" when `has_files`.
    """
    main = next((i for i in TOPIC_PRIORITY if i in intents), None)
    if main is None:
        if Intent.URGENT in intents:
            text = "an urgent request"
        else:
            text = "a reply" if is_reply else "a message"
            is_reply = False
    else:
        article, noun = _TOPIC[main]
        if Intent.URGENT in intents and main is not Intent.THANKS:
            text = f"an urgent {noun}"
        else:
            text = f"{article} {noun}".strip()
    if is_reply:
        text += " in reply"
    if has_files:
        text += " with attachments"
    return text
