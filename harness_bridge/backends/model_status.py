"""What answers an agent, as its harness describes it: the model's name, where it runs, whether
it can answer yet (an embedded model may still be being built), and how to switch to another.

`c2a run` hands it (`view`) to the platforms that show it, from each harness that `DescribesModel`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = ["NO_HARNESS", "DescribesModel", "ModelState", "ModelStatus"]

ModelState = Literal["ready", "building", "failed", "none"]


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
