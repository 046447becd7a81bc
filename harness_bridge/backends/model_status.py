"""What answers an agent, as its harness describes it: the model's name, where it runs, whether
it can answer yet (an embedded model may still be being built), and how to switch to another.

`c2a run` hands it (`views`) to the platforms that show it: each harness that `DescribesModel`
says its own, a ready model whose agent is known to be down (its model server stopped
answering, its harness died) shows `down`, and an agent with no harness `NO_HARNESS`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = ["NO_HARNESS", "DescribesModel", "ModelState", "ModelStatus", "views"]

ModelState = Literal["ready", "building", "failed", "down", "none"]

DOWN_DETAIL = "not answering now; what is asked waits and is answered when it is back"


@dataclass(frozen=True, slots=True)
class ModelStatus:
    """One harness's model. `since` (Unix seconds) is when a build began; `log` is the build's
    log file; `detail` says why it failed; `hint` is the one step to another model."""

    model: str
    where: str
    state: ModelState = "ready"
    since: float | None = None
    log: str | None = None
    detail: str = ""
    hint: str = ""

    def view(self) -> dict[str, Any]:
        """As the page reads it (camelCase keys, JSON values)."""
        return {
            "model": self.model,
            "where": self.where,
            "state": self.state,
            "since": self.since,
            "log": self.log,
            "detail": self.detail,
            "hint": self.hint,
        }


NO_HARNESS = ModelStatus(
    model="no model",
    where="the manifest gives no harness",
    state="none",
    detail="nothing answers until the manifest gives each a harness",
    hint="docs/harnesses.md",
)
"""What an agent with no `harness:` shows: nothing answers it (`state` none)."""


@runtime_checkable
class DescribesModel(Protocol):
    """A harness that can say which model answers it."""

    def model_status(self) -> ModelStatus: ...


def views(
    harnesses: Mapping[str, object], unanswered: Iterable[str], down: Mapping[str, datetime]
) -> dict[str, dict[str, Any]]:
    """Each agent's model as the page reads it: what its harness says, `down` (since when)
    instead of `ready` while the agent is known to be down, `NO_HARNESS` for one with none."""
    shown: dict[str, dict[str, Any]] = {}
    for agent, harness in harnesses.items():
        if isinstance(harness, DescribesModel):
            status = harness.model_status()
            if status.state == "ready" and agent in down:
                since = down[agent].timestamp()
                status = replace(status, state="down", since=since, detail=DOWN_DETAIL)
            shown[agent] = status.view()
    return shown | {agent: NO_HARNESS.view() for agent in unanswered}
