"""What the engine hands back to be done once the caller commits: typed values, never wire
messages. The composition root pattern-matches on the union:

    match emission:
        case Delivery():          # a harness is told about an event (its deliverer sends it)
        case Cancel() | Typing(): # a notification for a connected harness
        case Queued():            # a platform action waiting in the outbox
        case Escalation():        # a conversation that needs the lead

Only the harness bridge turns a `Delivery`, a `Cancel` or a `Typing` into a JSON-RPC message
(`harness_bridge.envelope`), once per send. The values are immutable through their `Final`
fields (see `core.events.ChatEvent` for why they are not `frozen`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from core.actions import Action
from core.decision import Decision
from core.events import ChatEvent, Conversation
from core.signals import Signal

__all__ = [
    "Cancel",
    "Delivery",
    "Emission",
    "Escalation",
    "Facts",
    "Outcome",
    "Queued",
    "Typing",
]


@dataclass(slots=True)
class Facts:
    """What the host knows about an event beyond its own fields, the same for every agent:
    the agent its author is (None for a person or a foreign bot), its mentions in the host's
    vocabulary (`agent:<id>`, `user:<platform id>`, `role:<name>`, `group:<platform id>`,
    `broadcast:<here|channel|everyone>`) and the signal a reaction's emoji stands for."""

    author_agent: Final[str | None]
    mentions: Final[tuple[str, ...]]
    signal: Final[Signal | None] = None


@dataclass(slots=True)
class Delivery:
    """What one agent is told about one event. `decision` carries the agent, the event id and
    the idempotency key; `event` is the event as the agent sees it (a thread reply's channel
    copy, a reminder's original), `seq` its ledger sequence. `received` is when the host
    received it, set only when that was late. `recipient` is whom the host resolved it to be
    aimed at, for this agent; `topic` the host-written topic of a knock (a delivery whose text
    is withheld). A reminder names its own sequence in `reminder_seq` and tells `event`, the
    event it reminds of, under the reminder's id (`decision.event_id`)."""

    decision: Final[Decision]
    event: Final[ChatEvent]
    seq: Final[int]
    facts: Final[Facts]
    received: Final[datetime | None] = None
    recipient: Final[str | None] = None
    topic: Final[str | None] = None
    reminder_seq: Final[int | None] = None

    @property
    def agent(self) -> str:
        return self.decision.agent

    @property
    def sequence(self) -> int:
        """The sequence the agent is given: the reminder's own for a reminder."""
        return self.seq if self.reminder_seq is None else self.reminder_seq


@dataclass(slots=True)
class Cancel:
    """Stop work on `event_id`: it was deleted, superseded or claimed by another agent."""

    agent: Final[str]
    event_id: Final[str]
    reason: Final[str]


@dataclass(slots=True)
class Typing:
    """Someone (`author_id`) is composing in `conversation` until about `until`: a passing
    hint, never in the ledger."""

    agent: Final[str]
    conversation: Final[Conversation]
    author_id: Final[str]
    until: Final[datetime]


@dataclass(slots=True)
class Queued:
    """A platform action put in the outbox under its idempotency key, done as `agent`."""

    agent: Final[str]
    action: Final[Action]


@dataclass(slots=True)
class Escalation:
    """A conversation (`conversation`, its key) that needs `agent`, the lead: a bot loop hit
    its limit, or an event went unanswered after its reminder (`responsible` the agent that
    had it)."""

    agent: Final[str]
    reason: Final[str]
    conversation: Final[str]
    event_id: Final[str]
    responsible: Final[str | None] = None


Emission = Delivery | Cancel | Typing | Queued | Escalation


@dataclass(slots=True)
class Outcome:
    """What ingesting one event did: `status` is `new` (appended to the ledger), `repeat`
    (already there: a retry, or another agent's copy) or `transient` (typing, not ledgered)."""

    status: Final[str]
    emissions: Final[list[Emission]]
