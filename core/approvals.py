"""Approvals: an agent's harness asks people whether the agent may go ahead, and waits.

`Approvals` keeps each open request (its agent, its choices, its deadline) until it is
decided. A press (`Press`) comes from a platform with the person's user id and the groups
(user groups, roles) the platform says they are in; it decides only when that person is one of
the agent's approvers (manifest `agents.<id>.approvers`: a user id, or `group:<id>`). The first
approver's press decides; anyone else's is refused, and says why; silence until the deadline is
a refusal. Who decided what and when is the `Verdict` the harness gets back.

The rules are pure (`may_decide`, `outcome_line`, `refusal`); the waiting is measured on the host's
clock, so a virtual clock times a request out in tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from core.actions import Choice
from core.clock import Clock, format_time

__all__ = [
    "ASK_PREFIX",
    "GROUP_PREFIX",
    "Approvals",
    "Press",
    "Pressed",
    "Verdict",
    "choice_id",
    "may_decide",
    "outcome_line",
    "parse_choice_id",
    "refusal",
]

ASK_PREFIX = "c2a:"
GROUP_PREFIX = "group:"
POLL_S = 0.05  # how often a waiting request looks at the clock for its deadline


def choice_id(request: str, choice: str) -> str:
    """The one string a platform's button carries back: `c2a:<request>:<choice>`."""
    return f"{ASK_PREFIX}{request}:{choice}"


def parse_choice_id(value: str) -> tuple[str, str] | None:
    """`(request, choice)` of a button's `choice_id`; None for any other string."""
    if not value.startswith(ASK_PREFIX):
        return None
    request, _, choice = value.removeprefix(ASK_PREFIX).rpartition(":")
    return (request, choice) if request and choice else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Press:
    """Someone pressed `choice` of `request` on `platform`: `user` is their platform id,
    `groups` the user groups or roles the platform says they are in."""

    request: str
    choice: str
    platform: str
    user: str
    groups: tuple[str, ...] = ()


class Pressed(StrEnum):
    """What a press did: decided the request, or was refused (not an approver, or the
    request is no longer open)."""

    DECIDED = "decided"
    NOT_APPROVER = "not_approver"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class Verdict:
    """How a request ended: the `choice` pressed (None: nobody answered in time), by `by` on
    `platform`, `at` when."""

    choice: Choice | None
    at: datetime
    by: str | None = None
    platform: str | None = None

    @property
    def allowed(self) -> bool:
        return self.choice is not None and self.choice.allow


def may_decide(approvers: Sequence[str], user: str, groups: Sequence[str]) -> bool:
    """Whether a person (`user`, in `groups`) is one of `approvers`."""
    return user in approvers or any(f"{GROUP_PREFIX}{g}" in approvers for g in groups)


def outcome_line(verdict: Verdict) -> str:
    """What the asked message says once decided: the choice, who, and when (UTC)."""
    when = format_time(verdict.at)
    if verdict.choice is None:
        return f"No answer by {when}: refused."
    return f"{verdict.choice.label}, by {verdict.by} at {when}."


def refusal(outcome: Pressed, agent: str | None) -> str:
    """What a person whose press did not decide is told (only they see it)."""
    if outcome is Pressed.NOT_APPROVER:
        return f"Only {agent}'s approvers can answer this."
    return "This question is no longer open."


@dataclass(slots=True)
class _Open:
    agent: str
    choices: tuple[Choice, ...]
    deadline: datetime
    answered: asyncio.Future[Verdict] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class Approvals:
    """The open requests of a workspace's run. `approvers(agent)` names who may decide for an
    agent (the manifest's list)."""

    def __init__(self, clock: Clock, approvers: dict[str, tuple[str, ...]]) -> None:
        self.clock = clock
        self.approvers = approvers
        self._open: dict[str, _Open] = {}

    def open(
        self, request: str, agent: str, choices: tuple[Choice, ...], within: timedelta
    ) -> None:
        """Start waiting for an answer to `request` until `within` from now."""
        self._open[request] = _Open(agent, choices, self.clock.now() + within)

    def agent_of(self, request: str) -> str | None:
        """The agent an open request asks for; None when it is not open."""
        pending = self._open.get(request)
        return None if pending is None else pending.agent

    def press(self, press: Press) -> Pressed:
        """A press on a button: it decides the open request when its person is an approver of
        the request's agent and the choice is one of its choices."""
        pending = self._open.get(press.request)
        choice = (
            next((c for c in pending.choices if c.id == press.choice), None) if pending else None
        )
        if pending is None or choice is None or pending.answered.done():
            return Pressed.CLOSED
        if not may_decide(self.approvers.get(pending.agent, ()), press.user, press.groups):
            return Pressed.NOT_APPROVER
        pending.answered.set_result(Verdict(choice, self.clock.now(), press.user, press.platform))
        return Pressed.DECIDED

    def answer(self, press: Press | None) -> str | None:
        """`press` it; None when it decided, else the refusal its presser is told (`refusal`).
        None is a button of no request (an id that does not parse): refused as closed."""
        if press is None:
            return refusal(Pressed.CLOSED, None)
        outcome = self.press(press)
        if outcome is Pressed.DECIDED:
            return None
        return refusal(outcome, self.agent_of(press.request))

    async def wait(self, request: str) -> Verdict:
        """The verdict on an open request: the first approver's press, or a refusal at its
        deadline (on the host's clock). The request is closed after."""
        pending = self._open[request]
        try:
            while not pending.answered.done():
                if self.clock.now() >= pending.deadline:
                    return Verdict(None, pending.deadline)
                await asyncio.wait([pending.answered], timeout=POLL_S)
            return pending.answered.result()
        finally:
            del self._open[request]
