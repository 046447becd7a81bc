"""Harness backends found by name: a manifest's `harness: {backend: NAME, ...}` picks one.

Backends are Python entry points in the group `c2a.backends` (the built-in ones are declared
in pyproject.toml), so a new backend is a new package, not an edit here. Each entry point is a
factory `(context, settings) -> Harness`: the `HarnessContext` is what the composition root
made for the agent (its chat port, the deliveries it is sent, what its platforms take), never
the engine itself. A factory validates its own settings and raises ManifestError naming what
is wrong.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError

from core.agent_port import AgentPort
from core.deliveries import DeliveryPort
from core.errors import ManifestError

__all__ = [
    "GROUP",
    "Harness",
    "HarnessContext",
    "HarnessFactory",
    "MailboxInMemory",
    "available",
    "build",
    "validate",
]

GROUP = "c2a.backends"

Settings = TypeVar("Settings", bound=BaseModel)


class Harness(Protocol):
    """A running agent harness: `run` keeps its deliveries flowing until cancelled; `wake`
    says new deliveries are pending."""

    async def run(self) -> None: ...

    def wake(self) -> None: ...


@runtime_checkable
class MailboxInMemory(Protocol):
    """A harness whose mailbox lives in the host's own memory (a built-in one): what it
    acknowledged is gone when the process stops, so a start tells it again
    (`core.restart.tell_again`)."""

    mailbox_in_memory: bool


@dataclass(frozen=True, slots=True)
class HarnessContext:
    """What one agent's harness is built from: `port`, everything the agent may do in chat
    (and the host's clock); `deliveries`, what the host tells it; `streaming`, the platforms
    that take a reply streamed as drafts while it is written
    (`core.platform.Platform.streams_drafts`); `draft_limits`, the most characters one streamed
    message grows to on each of them that has a limit (`Platform.draft_limit`). Built by `c2a
    run`, it also names the run's `manifest` file and its `ledger`, the SQLite file it writes
    ("" when the run's ledger is not a SQLite file), for a harness whose tools run in a process
    of their own, the run's `environ`, and `files`, the path in the run's data folder that a
    harness names files of its own after (`<data folder>/<workspace>`, a suffix of theirs
    added); all None outside a run (`environ`: this process's)."""

    port: AgentPort
    deliveries: DeliveryPort
    streaming: frozenset[str] = frozenset()
    draft_limits: Mapping[str, int] = field(default_factory=dict)
    manifest: str | None = None
    ledger: str | None = None
    environ: Mapping[str, str] | None = None
    files: str | None = None

    @property
    def agent(self) -> str:
        return self.port.agent

    @property
    def host_environ(self) -> Mapping[str, str]:
        """The environment c2a runs in: the run's, else this process's."""
        return os.environ if self.environ is None else self.environ


HarnessFactory = Callable[[HarnessContext, Mapping[str, Any]], Harness]


def available() -> list[str]:
    """The names of the installed backends."""
    return sorted(point.name for point in entry_points(group=GROUP))


def build(context: HarnessContext, settings: Mapping[str, Any]) -> Harness:
    """The harness the settings ask for; ManifestError for an unknown backend."""
    name = settings.get("backend")
    for point in entry_points(group=GROUP):
        if point.name == name:
            factory: HarnessFactory = point.load()
            return factory(context, settings)
    raise ManifestError(
        f"agents.{context.agent}.harness.backend: unknown backend {name!r}; installed: "
        f"{', '.join(available()) or 'none'}"
    )


def validate(kind: type[Settings], agent: str, settings: Mapping[str, Any]) -> Settings:
    """The agent's settings read as `kind`; one ManifestError naming each bad key path."""
    try:
        return kind.model_validate(dict(settings))
    except ValidationError as exc:
        raise ManifestError(
            "; ".join(
                f"agents.{agent}.harness.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                for e in exc.errors()
            )
        ) from None
