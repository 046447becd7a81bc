"""What `/metrics` reads from the run when it is scraped rather than counting as it goes: the
turns each harness finished and has running, which agents are known to be down, and the leases
this process holds. Each is a `Reader` (`c2a.metrics.Metrics.read`) over the run's own values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime

from c2a.metrics import Labels, Reader, labels

__all__ = ["leases_read", "running_read", "turns_read", "unavailable_read"]


def turns_read(workspace: str, harnesses: Mapping[str, object]) -> Reader:
    """Turns finished by the harnesses that run a model loop in this process (each counts its
    `outcomes`), by agent and outcome (`completed`, `failed`)."""

    def read() -> dict[Labels, float]:
        return {
            labels(workspace=workspace, agent=agent, outcome=outcome): float(n)
            for agent, harness in harnesses.items()
            for outcome, n in getattr(harness, "outcomes", {}).items()
        }

    return read


def running_read(workspace: str, harnesses: Mapping[str, object]) -> Reader:
    """Turns running now (or waiting for the turn running in their conversation) in the
    harnesses that run a model loop in this process, by agent."""

    def read() -> dict[Labels, float]:
        running = {agent: getattr(harness, "running", None) for agent, harness in harnesses.items()}
        return {
            labels(workspace=workspace, agent=agent): float(n)
            for agent, n in running.items()
            if isinstance(n, int)
        }

    return read


def unavailable_read(
    workspace: str, agents: Callable[[], Iterable[str]], down: Mapping[str, datetime]
) -> Reader:
    """1 for each agent whose harness or model is known to be down (`Engine.unavailable`),
    0 for the others: what to alert on."""

    def read() -> dict[Labels, float]:
        return {
            labels(workspace=workspace, agent=agent): float(agent in down) for agent in agents()
        }

    return read


def leases_read(workspace: str, holder: str, held: Callable[[], Iterable[str]]) -> Reader:
    """The leases `holder` holds for `workspace` (`held` names them), each 1."""

    def read() -> dict[Labels, float]:
        return {labels(workspace=workspace, lease=n, holder=holder): 1.0 for n in held()}

    return read
