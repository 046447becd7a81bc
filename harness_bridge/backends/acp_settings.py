"""What the manifest says of an `acp` agent (`harness: {backend: acp, ...}`), checked, and which
manifest and SQLite ledger its chat tools' stdio MCP server process opens (`ledger_of`): the
run's own, so the agent never answers into a ledger nothing sends from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.errors import ManifestError
from harness_bridge.backends.environment import variable_names
from harness_bridge.backends.registry import HarnessContext

__all__ = ["AcpSettings", "ledger_of"]


class AcpSettings(BaseModel):
    """`harness: {backend: acp, command: [...], allow: [...]}`; `manifest` and `store` (the
    chat tools' manifest and ledger) are the run's own unless given (`ledger_of`)."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["acp"]
    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    pass_env: list[str] = Field(default_factory=list)
    manifest: str | None = Field(default=None, min_length=1)
    store: str | None = Field(default=None, min_length=1)
    cwd: str | None = None
    allow: list[str] = Field(default_factory=list)
    quiet_ms: int = Field(default=3000, ge=0)
    progress_every_s: float = Field(default=10.0, ge=0)
    turn_timeout_s: float | None = Field(default=None, gt=0)

    _pass_env = field_validator("pass_env")(variable_names)

    @field_validator("allow")
    @classmethod
    def _no_wildcards(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name or any(c in name for c in "*?[]"):
                raise ValueError(f"{name!r} is not a tool name (wildcards are not allowed)")
        return names


def ledger_of(
    context: HarnessContext, manifest: str | None, store: str | None
) -> tuple[str, str] | None:
    """The manifest and the SQLite ledger the chat tools' stdio MCP server process opens: the
    run's own unless the settings name them; None when the run's ledger is not a SQLite file
    (PostgreSQL), where only the host's HTTP endpoint serves them (`acp_tools`). A `store` that
    is not the run's ledger is refused: the agent's answers would be written where nothing
    sends them. ManifestError, saying what to write, when either cannot be known."""
    where = f"agents.{context.agent}.harness"
    if context.ledger is not None and store is not None and not _same(store, context.ledger):
        ledger = repr(context.ledger) if context.ledger else "in PostgreSQL"
        raise ManifestError(
            f"{where}.store is {store!r}, but this run's ledger is {ledger}: the "
            "agent's answers would be written where nothing sends them; leave `store` out"
        )
    if context.ledger == "":
        return None
    store = store or context.ledger
    manifest = manifest or context.manifest
    if store is None or manifest is None:
        missing = " and ".join(
            name for name, value in (("manifest", manifest), ("store", store)) if value is None
        )
        raise ManifestError(f"{where}: name the {missing} (the workspace's manifest and ledger)")
    return manifest, store


def _same(store: str, ledger: str) -> bool:
    return ledger != "" and Path(store).resolve() == Path(ledger).resolve()
