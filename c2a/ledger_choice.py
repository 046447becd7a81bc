"""Which ledger an operator's command (`c2a audit`, `c2a prune`) opens: the one `c2a run`
writes for the manifest, found the way `c2a run` finds it.

That is the manifest's `store:`, else `$C2A_DATABASE_URL`, else SQLite in the data directory
(`--data-dir`, as `c2a run` is given it). A missing SQLite file is refused rather than made: a
command run before the workspace ever ran, or with the wrong `--data-dir`, says so.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from c2a.platforms import load_workspace
from core.errors import ManifestError
from core.manifest import Workspace
from core.store import Store
from core.store_choice import open_store, store_url

__all__ = ["Ledger", "add_data_dir", "ledger_of"]


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    """Let `parser` take `--data-dir` as `c2a run` does."""
    parser.add_argument(
        "--data-dir", default=".c2a", help="where `c2a run` keeps the SQLite ledger (.c2a)"
    )


@dataclass(frozen=True, slots=True)
class Ledger:
    """The workspace, its (unopened) store, and the SQLite file it is (None: PostgreSQL)."""

    workspace: Workspace
    store: Store
    sqlite_file: Path | None


def ledger_of(manifest: str, data_dir: str) -> Ledger:
    """The ledger `c2a run` writes for `manifest`; ManifestError when it is a SQLite file that
    does not exist."""
    workspace = load_workspace(Path(manifest))
    name = workspace.manifest.workspace
    url = store_url(workspace.manifest.store, os.environ)
    sqlite_file = Path(data_dir) / f"{name}.sqlite3"
    if url is None and not sqlite_file.exists():
        raise ManifestError(
            f"no ledger at {sqlite_file}: `c2a run` writes it there once it has run "
            "(--data-dir names another directory)"
        )
    store = open_store(url, str(sqlite_file), schema=name)
    return Ledger(workspace, store, None if url else sqlite_file)
