"""What `c2a run` starts from, checked before anything connects: every manifest validated
against the installed platforms and harness backends, and the data directory, which holds the
ledgers and the web chat's record, private to this user."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from c2a.platforms import installed, load_workspace
from core.errors import ManifestError
from core.manifest import Workspace
from core.platform import Platform
from harness_bridge.backends.registry import available

__all__ = ["load_workspaces", "private_directory"]

log = logging.getLogger("c2a.run")


def load_workspaces(
    manifests: Sequence[str | Path], platforms: Mapping[str, Platform] | None = None
) -> list[Workspace]:
    """Every manifest, validated (each agent's harness backend installed) for `platforms` (by
    default the installed ones); raises ManifestError for the first bad one or a workspace
    named twice."""
    platforms = installed() if platforms is None else platforms
    workspaces: list[Workspace] = []
    seen: dict[str, str] = {}
    for path in manifests:
        workspace = load_workspace(path, backends=available(), platforms=platforms)
        name = workspace.manifest.workspace
        if name in seen:
            raise ManifestError(
                f"{path}: workspace {name!r} is also in {seen[name]}; each ledger needs its own "
                "workspace name"
            )
        seen[name] = str(path)
        workspaces.append(workspace)
    return workspaces


def private_directory(directory: Path) -> None:
    """The data directory, created readable by this user only: it holds the ledgers (every
    message the agents were told) and the web chat's record. One that already exists is left
    as it is, with a warning when other users can read it."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    if directory.stat().st_mode & 0o077:
        log.warning(
            "the data directory %s can be read by other users of this machine; "
            "`chmod 700 %s` keeps the ledgers private",
            directory,
            directory,
        )
