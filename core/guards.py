"""The rules of what an agent may say, as functions of a delivery and the facts around it.

Each `check_*` raises `ToolError`, whose words the model reads, for what is refused: an answer
(message or reaction) to what the policy or another agent's claim keeps the agent out of, a
claim on what was asked of another agent, a long answer or a non-acknowledging reaction to an
`ack_only` event, a second, different answer to an event already answered, too many messages
in one conversation in a minute, a mention the directedness does not call for or of nobody
known, a private answer to anyone but the asker, a message with no text. The rest say what an
answer records: only a visible answer closes a question (`reaction_disposition`), and what a
turn still owes (`is_owed`).
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Sequence
from datetime import datetime, timedelta

from core.actions import private_person, user_ids
from core.agent_port import Outgoing
from core.decision import Directedness, Disposition, Policy
from core.errors import ToolError
from core.manifest import Manifest
from core.signals import SIGNAL_DISPOSITION, Signal
from core.store import StoredDelivery

__all__ = [
    "ANSWERED",
    "RECEIPT_CHARS",
    "UNANSWERED",
    "SendBudget",
    "check_answerable",
    "check_audience",
    "check_claim",
    "check_reaction",
    "check_reply",
    "check_text",
    "derived_key",
    "is_owed",
    "mentions",
    "own_key",
    "reaction_disposition",
]

RECEIPT_CHARS = 120
# A delivery in one of these states still owes its answer.
UNANSWERED = frozenset({None, Disposition.CLAIMED, Disposition.FAILED})
# Dispositions a reaction alone cannot earn on a question: they promise an answer.
_NEEDS_FOLLOW_THROUGH = frozenset({Disposition.RESPONDED, Disposition.CLAIMED})
# What answers a question: a visible answer, or an acknowledgement where one is owed.
ANSWERED = frozenset({Disposition.RESPONDED, Disposition.ACKNOWLEDGED})
_OBLIGING = frozenset({Directedness.TO_ME, Directedness.TO_MY_ROLE})


def check_answerable(delivery: StoredDelivery, holder: str | None, agent: str) -> None:
    """Refuse any answer, message or reaction, to what the policy or a claim (`holder`, the
    event's claim holder now) keeps `agent` out of."""
    decision = delivery.decision
    if decision.policy is Policy.MUST_NOT_RESPOND:
        raise ToolError(
            f"refused: {decision.event_id} is must_not_respond for you "
            f"({decision.reason}); do not answer it, not even with a reaction"
        )
    if holder is not None and holder != agent:
        raise ToolError(f"refused: agent:{holder} claimed {decision.event_id}; stay out")


def check_claim(delivery: StoredDelivery, others: Sequence[StoredDelivery]) -> None:
    """Refuse a claim, unless the agent must answer the event too, on an event addressed to
    another agent who must answer it: the claim would take it from them, and claims share out
    what was offered to several (or join what no one was asked), never what was asked of one."""
    decision = delivery.decision
    if decision.policy is Policy.MUST_RESPOND:
        return
    for other in others:
        asked = other.decision
        if (
            asked.agent != decision.agent
            and asked.policy is Policy.MUST_RESPOND
            and asked.directedness is Directedness.TO_ME
        ):
            raise ToolError(
                f"refused: {decision.event_id} is addressed to agent:{asked.agent}, who must "
                "answer it; leave it to them"
            )


def check_reply(delivery: StoredDelivery, holder: str | None, agent: str, text: str) -> None:
    """Refuse a message in reply to `delivery` that the policy, a claim or an earlier answer
    forbids, or to words an edit or a delete replaced (a retry of a call already queued is the
    caller's to let through)."""
    check_answerable(delivery, holder, agent)
    decision = delivery.decision
    if decision.policy is Policy.ACK_ONLY and len(text) > RECEIPT_CHARS:
        raise ToolError(
            f"refused: {decision.event_id} is ack_only; react, or send a short receipt "
            f"of at most {RECEIPT_CHARS} characters"
        )
    if delivery.disposition in ANSWERED:
        raise ToolError(
            f"refused: you already answered {decision.event_id}; a different answer "
            "needs the first to have failed"
        )
    if delivery.disposition is Disposition.SUPERSEDED:
        raise ToolError(
            f"refused: {decision.event_id} was edited or deleted (answer the edited version "
            "you were sent, if there is one), handed over, or answered by another agent"
        )


def check_reaction(
    delivery: StoredDelivery, holder: str | None, agent: str, signal: Signal
) -> None:
    """A reaction follows the policy like a message; on `ack_only` it is the answer, so only
    an acknowledgement (`seen`, `agree`): a commitment or a verdict answers nothing."""
    check_answerable(delivery, holder, agent)
    decision = delivery.decision
    acknowledges = SIGNAL_DISPOSITION[signal] is Disposition.ACKNOWLEDGED
    if decision.policy is Policy.ACK_ONLY and not acknowledges:
        raise ToolError(
            f"refused: {decision.event_id} is ack_only; acknowledge it with seen or agree, "
            f"not {signal.value}"
        )


def reaction_disposition(policy: Policy, signal: Signal) -> Disposition | None:
    """What a reaction records. Only a visible answer closes a question, so on `must_respond`
    a reaction is a status people see and records nothing (a reminder follows if no answer
    does); on `may_respond` it records its disposition unless that would say answered
    (`done`) or owned (`working`, `claimed`) with nothing to show for it."""
    disposition = SIGNAL_DISPOSITION[signal]
    if policy is Policy.MUST_RESPOND:
        return None
    if policy is Policy.MAY_RESPOND and disposition in _NEEDS_FOLLOW_THROUGH:
        return None
    return disposition


def is_owed(delivery: StoredDelivery, holder: str | None, agent: str) -> bool:
    """Whether `delivery` still owes `agent`'s visible answer: `must_respond`, or `may_respond`
    with the agent holding the event's claim (the one selected to answer a role mention); not
    answered yet (at most claimed, or failed before) and not claimed by another agent."""
    if delivery.disposition not in UNANSWERED:
        return False
    policy = delivery.decision.policy
    if policy is Policy.MUST_RESPOND:
        return holder in (None, agent)
    return policy is Policy.MAY_RESPOND and holder == agent


def mentions(
    directedness: Directedness, recipients: Sequence[str], manifest: Manifest
) -> tuple[str, ...]:
    """Whom a post mentions: its recipients, when its directedness obliges them (`to_me`:
    exactly one), each known to the manifest; nobody for ambient or `to_other` posts."""
    if directedness not in _OBLIGING:
        if recipients:
            raise ToolError(
                "a post with directedness ambient or to_other mentions nobody; "
                "drop recipients, or choose to_me (one recipient) to create an obligation"
            )
        return ()
    if directedness is Directedness.TO_ME and len(recipients) != 1:
        raise ToolError("directedness to_me obligates exactly one recipient")
    for recipient in recipients:
        kind, _, name = recipient.partition(":")
        known = (
            (kind == "agent" and name in manifest.agents)
            or (kind == "role" and name in manifest.roles)
            or (kind == "user" and bool(name))
        )
        if not known:
            raise ToolError(
                f"unknown recipient {recipient!r}: use agent:<id>, role:<name> or "
                "user:<platform id>"
            )
    return tuple(recipients)


def check_audience(message: Outgoing, in_dm: bool, asker: str | None) -> str | None:
    """The person a post only one person is to see (`ephemeral`, or `dm` from outside a DM) is
    for, None for any other post (`Post.person`): its first `user:` recipient, else the author
    of the message it answers (`asker`). Refused when it names neither, and when an answer said
    privately would go to anyone but the person who asked. Refused here rather than queued: no
    platform could deliver the first, and the second would leave the asker with nothing while
    their question counts as answered."""
    private = message.visibility == "ephemeral" or (message.visibility == "dm" and not in_dm)
    if not private:
        return None
    users = user_ids(message.recipients)
    if asker is None and not users:
        raise ToolError(
            f"a post marked {message.visibility} is for one person: answer their message "
            '(inReplyTo), or name them (directedness to_me, recipients ["user:<id>"])'
        )
    if asker is not None and users and users[0] != asker:
        raise ToolError(
            f"refused: a {message.visibility} answer to {message.in_reply_to} goes to its "
            f"author, user:{asker}, not to user:{users[0]}"
        )
    return private_person(message.recipients, asker)


def check_text(text: str) -> None:
    """Refuse a message with nothing to show: every platform turns blank text away."""
    if not text.strip():
        raise ToolError("a message needs some text: it was empty or only white space")


def own_key(agent: str, key: str) -> str:
    """A key an agent chose for its message, in that agent's own part of the outbox
    (`<agent>/<key>`): outbox keys are one namespace, and a key already taken counts as a retry,
    so without this one agent could take the key another's answer will have and keep that
    answer from being posted. The key as returned maps to itself."""
    prefix = f"{agent}/"
    return key if key.startswith(prefix) else prefix + key


def derived_key(agent: str, text: str, where: str) -> str:
    """A key for a message sent without one: the same message (same reply or place `where`,
    same text) always gets the same key, so a retry is recognised."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"{where}:{agent}:send:{digest}"


class SendBudget:
    """At most `per_minute` new messages from one agent in one conversation."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._sent: dict[str, deque[datetime]] = {}

    def spend(self, conversation: str, now: datetime) -> None:
        """Count one message in `conversation` at `now`; refuse it when the minute is full."""
        sent = self._sent.setdefault(conversation, deque())
        while sent and sent[0] <= now - timedelta(minutes=1):
            sent.popleft()
        if len(sent) >= self.per_minute:
            raise ToolError(
                f"refused: you sent {self.per_minute} messages in {conversation} in the last "
                "minute; wait, or say it in fewer messages"
            )
        sent.append(now)
