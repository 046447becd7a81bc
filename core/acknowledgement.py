"""The fast acknowledgement: the reaction a person sees on a message an agent must answer,
before the agent has said a word.

It goes on a message the agent must answer, and on one addressed to a role or to everyone
whose claim the host gave this agent (the responder it picked: its answer is owed too, and the
person sees who took the question). `seen` when a model turn will take it, `queued` when the
agent is over its turn budget, `blocked` while the agent's harness is down (spec 000's status
signals); and `declined` on a message for an agent muted by `/c2a mute` (spec 001: "not this
agent, or won't act"), so the person who asked it knows no answer is coming. Pure: the engine
puts the action in the outbox under its key, so a redecided copy never reacts twice.

`BlockedMarks` remembers each `blocked` placed while an agent is down (on a question that
came meanwhile, or in place of the `seen` of one it had taken: `core.handover`), until it is
up again: each is then replaced by `seen` (its model turn takes the message now), or only taken
off where the workspace shows no `seen`, so no 🚧 stays on a message the agent went on to
answer (`core.handover` takes it off a question that went to another agent). It is memory only; at a
start, `core.restart.blocked_again` gives it the marks still on questions the agents owe.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field, replace

from core.actions import Action, React, Unreact, reaction_key
from core.decision import Decision, Directedness, InjectionMode
from core.events import ChatEvent, EventKind
from core.signals import GlyphMap, Signal

__all__ = [
    "BlockedMarks",
    "Lift",
    "acknowledged",
    "acknowledgement",
    "blocked_key",
    "lift_key",
    "taken_back",
]

_TURNS = (InjectionMode.BUFFERED, InjectionMode.IMMEDIATE)  # the modes that start a model turn


def acknowledged(decision: Decision) -> bool:
    """Whether `decision` may get a fast acknowledgement at all: the agent owes an answer, or
    it was for an agent that is muted."""
    return decision.owes_answer or _muted(decision)


def _muted(decision: Decision) -> bool:
    return decision.reason == "muted" and decision.directedness is Directedness.TO_ME


def acknowledgement(
    event: ChatEvent, decision: Decision, glyphs: GlyphMap, *, down: bool, seen: bool
) -> React | None:
    """The reaction acknowledging `event` for `decision`'s agent, or None when it gets none:
    only a message with a message id that the agent must answer, or that was for it while it
    is muted, does. `down` says the agent's harness is unavailable; `seen` is the workspace's
    `seen_signal` setting."""
    if (
        not acknowledged(decision)
        or event.kind is not EventKind.MESSAGE
        or event.message_id is None
    ):
        return None
    if _muted(decision):
        signal = Signal.DECLINED
    elif down:
        signal = Signal.BLOCKED
    elif decision.reason == "over_budget":
        signal = Signal.QUEUED
    elif seen and decision.mode in _TURNS:
        signal = Signal.SEEN
    else:
        return None
    return React(
        agent=decision.agent,
        platform=event.platform,
        conversation=event.conversation.id,
        key=reaction_key(decision.idempotency_key, signal),
        message_id=event.message_id,
        signal=signal,
        emoji=glyphs.native(event.platform, signal),
        event_id=event.event_id,
        placed=frozenset(),  # just told of the message: none of its statuses is on it
    )


def blocked_key(decision_key: str, outage: int = 0) -> str:
    """The outbox key of the `blocked` put on a question in its agent's `outage`-th time down
    with it (0: the first), so each time down shows 🚧 again."""
    return _nth(reaction_key(decision_key, Signal.BLOCKED), outage)


def lift_key(decision_key: str, outage: int = 0) -> str:
    """The outbox key of what lifts that `outage`'s `blocked` (`BlockedMarks`): not the first
    `seen`'s, which a question acknowledged before its agent went down already has."""
    return _nth(reaction_key(decision_key, Signal.SEEN) + ":again", outage)


def _nth(key: str, outage: int) -> str:
    return key if outage == 0 else f"{key}:{outage + 1}"


@dataclass(slots=True)
class BlockedMarks:
    """The `blocked` acknowledgements placed while their agent was down (see the module doc)."""

    _held: dict[str, list[tuple[str, int, React]]] = field(default_factory=dict)

    def note(self, decision: Decision, action: Action, outage: int = 0) -> None:
        """`action`, acknowledging `decision` in its agent's `outage`-th time down with it, went
        in the outbox: remembered when it is a `blocked`."""
        if isinstance(action, React) and action.signal is Signal.BLOCKED:
            held = self._held.setdefault(action.agent, [])
            held.append((decision.idempotency_key, outage, action))

    def forget(self, decision_key: str) -> React | None:
        """The question under `decision_key` is no longer its agent's: its mark is not lifted.
        The `blocked` held for it, if any."""
        found: React | None = None
        for agent, held in self._held.items():
            found = next((a for key, _, a in held if key == decision_key), found)
            self._held[agent] = [mark for mark in held if mark[0] != decision_key]
        return found

    def lifted(self, down: Container[str], glyphs: GlyphMap, *, seen: bool) -> list[Lift]:
        """What replaces each `blocked` of every agent no longer `down`, forgotten here: `seen`
        where the workspace shows it (`seen_signal`), else nothing (the `blocked` taken off)."""
        return [
            _seen(blocked, lift_key(decision_key, outage), glyphs)
            if seen
            else taken_back(blocked, Signal.BLOCKED, lift_key(decision_key, outage))
            for agent in [agent for agent in self._held if agent not in down]
            for decision_key, outage, blocked in self._held.pop(agent)
        ]


Lift = React | Unreact


def _seen(blocked: React, key: str, glyphs: GlyphMap) -> React:
    seen = Signal.SEEN
    return replace(
        blocked,
        signal=seen,
        emoji=glyphs.native(blocked.platform, seen),
        key=key,
        placed=frozenset({Signal.BLOCKED}),
    )


def taken_back(placed: React, signal: Signal, key: str) -> Unreact:
    """The `signal` that `placed` put on its message taken off again, under `key`."""
    return Unreact(
        agent=placed.agent,
        platform=placed.platform,
        conversation=placed.conversation,
        key=key,
        message_id=placed.message_id,
        signal=signal,
        event_id=placed.event_id,
    )
