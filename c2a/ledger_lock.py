"""One `c2a run` a SQLite ledger: the lock a run holds on its ledger file while it runs.

On SQLite one process owns a workspace (docs/deploy.md). A second `c2a run` on the same file
(the same `--data-dir` in a second terminal, a service started twice) would take the same
platform events, tell the harnesses again and answer every message twice; its start is refused
instead, naming the process that holds the file, before it touches the ledger. `c2a replay
--store FILE` takes the same lock: replayed events in a live ledger would be delivered to the
live run's harnesses, and answered on the real platforms.

The lock is the operating system's (`flock` on `<ledger>.lock`, beside the file), so a process
that ends in any way, kill -9 included, lets go of it at once and a restart never waits. The
MCP process of an ACP agent, which writes the same ledger for the run, takes no lock.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from core.errors import StoreError

__all__ = ["LedgerLock"]


_SECOND_WRITER = (
    ", and a second writer would have every message answered twice: stop that one, or use "
    "another ledger (--data-dir for c2a run, --store for c2a replay)"
)


class LedgerLock:
    """The lock on the SQLite ledger at `ledger`, taken by `take` and given back by `release`."""

    def __init__(self, ledger: str | Path) -> None:
        self.ledger = Path(ledger)
        self.path = self.ledger.with_name(self.ledger.name + ".lock")
        self._fd: int | None = None

    def take(self, instead: str = _SECOND_WRITER) -> None:
        """Hold the lock; raises StoreError, saying who holds it and then `instead` (what to
        do), when another process does (or why, when the ledger's folder cannot be written)."""
        if self._fd is not None:
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreError(f"cannot open the ledger at {self.ledger}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise StoreError(
                f"the ledger {self.ledger} is in use by a running c2a (process {holder}){instead}"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        """Give the lock back (the file stays: removing it could race a process taking it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
