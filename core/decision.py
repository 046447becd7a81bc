"""The three attention axes of C2A, dispositions, and the per-(event, agent) `Decision`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

__all__ = [
    "Decision",
    "Directedness",
    "Disposition",
    "InjectionMode",
    "Policy",
    "Priority",
]


class Directedness(StrEnum):
    """Is this event aimed at this agent?"""

    TO_ME = "to_me"
    TO_MY_ROLE = "to_my_role"
    TO_ME_LIKELY = "to_me_likely"  # unnamed, but continues a conversation with this agent
    TO_OTHER = "to_other"
    AMBIENT = "ambient"


class Policy(StrEnum):
    """Must the agent answer?"""

    MUST_RESPOND = "must_respond"
    MAY_RESPOND = "may_respond"
    ACK_ONLY = "ack_only"
    MUST_NOT_RESPOND = "must_not_respond"


class InjectionMode(StrEnum):
    """How much of the event the model sees."""

    IMMEDIATE = "immediate"
    BUFFERED = "buffered"
    NOTIFY = "notify"
    TOOL_MAILBOX = "tool_mailbox"
    DIGEST = "digest"
    SILENT = "silent"


class Priority(StrEnum):
    """How soon the event wants attention."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    URGENT = "urgent"


class Disposition(StrEnum):
    """How a delivered event ended for one agent (spec 000)."""

    RESPONDED = "responded"
    ACKNOWLEDGED = "acknowledged"
    DEFERRED = "deferred"
    CLAIMED = "claimed"
    IGNORED = "ignored"
    SUPERSEDED = "superseded"
    FAILED = "failed"


@dataclass(slots=True)
class Decision:
    """What the host decided about one event for one agent, and why.

    `reason` is a machine-readable word (`direct_message`, `direct_mention`, `claimed_by_other`,
    ...; the full list is in docs/attention.md). `claimed_by` names the agent holding the claim
    on the event, `continues` the event this one continues (a fragment), `supersedes` the
    version an edit replaces. Immutable through its `Final` fields (see `ChatEvent`).
    """

    event_id: Final[str]
    agent: Final[str]
    directedness: Final[Directedness]
    policy: Final[Policy]
    mode: Final[InjectionMode]
    reason: Final[str]
    priority: Final[Priority] = Priority.NORMAL
    deadline_ms: Final[int | None] = None
    claimed_by: Final[str | None] = None
    continues: Final[str | None] = None
    supersedes: Final[str | None] = None

    @property
    def owes_answer(self) -> bool:
        """Whether the agent owes the person an answer: it must respond, or it is the responder
        the host picked for a role or crowd question (it holds the claim it was decided with).
        The one definition behind obligations, busy counts, acknowledgements and notices."""
        return self.policy is Policy.MUST_RESPOND or (
            self.policy is Policy.MAY_RESPOND and self.claimed_by == self.agent
        )

    @property
    def idempotency_key(self) -> str:
        """The delivery's stable key: `<eventId>:<agentId>`."""
        return f"{self.event_id}:{self.agent}"
