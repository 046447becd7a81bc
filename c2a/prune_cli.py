"""`c2a prune`: drop, once, what a workspace keeps longer than it needs (`core.retention`).

It prunes the ledger `c2a run` writes for the manifest (`c2a.ledger_choice`) by `--days`, else
by the manifest's `retention: {days: N}`; a running host with `retention:` does the same every
hour by itself, so the command is for a workspace that has none, or a first prune before
turning it on. On SQLite one process owns the ledger: while a `c2a run` holds it the command
is refused, naming that process (`c2a.ledger_lock`), and says to set `retention:` instead;
holding the ledger, it prunes the web chat's history in the data directory too. On PostgreSQL
it runs beside the hosts (its batches take turns with their transactions) and leaves the web
chat's history to the host that writes it, whose own retention prunes it.

It prints one line: how many rows of each kind went, and before when. With `--dry-run` it
drops nothing and says what would go: the same batches run and are rolled back
(`core.retention.rehearse`), so the counts are those of the statements that would drop them.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime
from pathlib import Path

from c2a.cli_args import add_manifest
from c2a.ledger_choice import Ledger, add_data_dir, ledger_of
from c2a.ledger_lock import LedgerLock
from c2a.platforms import installed
from core.clock import format_time
from core.errors import C2AError, ManifestError
from core.retention import (
    MOST_DAYS,
    RetentionSetting,
    counted,
    prune,
    prune_before,
    rehearse,
)

__all__ = ["register"]


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `c2a prune` to the command line."""
    command = subcommands.add_parser(
        "prune", help="drop what is older than the workspace's retention (or --days)"
    )
    add_manifest(command, "workspace manifest (YAML), as `c2a run` is given it")
    add_data_dir(command)
    command.add_argument(
        "--days", type=_days, help="keep this many days (default: the manifest's retention)"
    )
    command.add_argument(
        "--dry-run", action="store_true", help="say what would go, and drop nothing"
    )
    command.set_defaults(run=_prune)


def _days(value: str) -> RetentionSetting:
    if not value.isdecimal() or not 1 <= int(value) <= MOST_DAYS:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a whole number of days, 1 to {MOST_DAYS}"
        )
    return RetentionSetting(days=int(value))


def _prune(args: argparse.Namespace) -> int:
    ledger = ledger_of(args.manifest, args.data_dir)
    setting = args.days or ledger.workspace.manifest.retention
    if setting is None:
        raise ManifestError(
            "how long to keep: give --days N, or set `retention: {days: N}` in the manifest"
        )
    before = prune_before(datetime.now(UTC), setting)
    lock = LedgerLock(ledger.sqlite_file) if ledger.sqlite_file is not None else None
    if lock is not None:
        lock.take(
            ": set `retention: {days: N}` in its manifest and it prunes by itself, or stop it"
        )
    try:
        dropped = asyncio.run(_drop(ledger, before, args.dry_run))
        if lock is not None:  # no host is writing the chat's own records either
            workspace = ledger.workspace.manifest.workspace
            dropped |= _forget(Path(args.data_dir), workspace, before, args.dry_run)
    finally:
        if lock is not None:
            lock.release()
    done = "would prune" if args.dry_run else "pruned"
    print(f"{done} what is older than {format_time(before)}: {counted(dropped)}")
    return 0


def _forget(data_dir: Path, workspace: str, before: datetime, dry_run: bool) -> dict[str, int]:
    """What the platforms that are themselves a record of the chat (the web chat) dropped, or
    would drop."""
    try:
        return {
            f"{name} messages": platform.forget(data_dir, workspace, before, dry_run=dry_run)
            for name, platform in installed().items()
            if platform.forget is not None
        }
    except OSError as exc:
        history = f"the chat's own history in {data_dir}"
        said = f"{history} cannot be read" if dry_run else f"the ledger is pruned, not {history}"
        raise C2AError(f"{said}: {exc.strerror or exc}: {exc.filename}") from None


async def _drop(ledger: Ledger, before: datetime, dry_run: bool) -> dict[str, int]:
    await ledger.store.open()
    try:
        return await (rehearse if dry_run else prune)(ledger.store, before)
    finally:
        await ledger.store.close()
