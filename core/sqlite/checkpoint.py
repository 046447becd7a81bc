"""The WAL's checkpoints, taken off the event loop.

SQLite copies its write-ahead log back into the database file (a checkpoint) in the commit
that takes the log past a thousand pages, on the committing connection: the host's one
connection, on the event loop. That commit then writes and flushes megabytes, and every event
arriving meanwhile waits (4-18 ms, about one commit in a hundred under load). So a
`Checkpointer` thread, with a connection of its own, takes a passive checkpoint whenever the
log has grown past `pages` (a quarter of SQLite's thousand): it copies what no reader still
needs, without waiting for the writer or making it wait, and the writer's next transaction
starts the log again from its beginning once all of it is copied, so the commit on the loop
rarely finds a thousand pages to copy. When it does (the thread fell behind a writer that
never paused), SQLite's own checkpoint still bounds the log as before, and finds most of it
copied already. Nothing about durability changes: a transaction is durable once its commit
is in the log, checkpointed or not. When the store closes, SQLite checkpoints what is left.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from typing import Final

__all__ = ["CHECKPOINT_PAGES", "Checkpointer"]

log = logging.getLogger(__name__)

CHECKPOINT_PAGES: Final = 250
"""Log pages past which the thread checkpoints: well before SQLite's own thousand."""

INTERVAL_S: Final = 0.1
"""How often the thread looks at the log's size (a `stat`, nothing more)."""


class Checkpointer:
    """Checkpoints the WAL of the database at `path` from a thread of its own."""

    def __init__(
        self, path: str, *, pages: int = CHECKPOINT_PAGES, interval: float = INTERVAL_S
    ) -> None:
        self.path = path
        self.pages = pages
        self.interval = interval
        self._wal = f"{path}-wal"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._db: sqlite3.Connection | None = None
        self._page_size = 4096
        self._failed = False

    def start(self) -> None:
        """Open the thread's connection and start looking."""
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._page_size = self._db.execute("PRAGMA page_size").fetchone()[0]
        self._thread = threading.Thread(target=self._run, name="c2a-checkpoint", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (a checkpoint under way finishes first) and close its connection."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._db is not None:
            self._db.close()
            self._db = None

    def tick(self) -> bool:
        """Checkpoint if the log file has grown past `pages`; whether it was tried. (The file
        keeps its size when the log starts again, so once it has grown every look checkpoints:
        with nothing new to copy that is a read of the shared index.)"""
        try:
            size = os.path.getsize(self._wal)
        except OSError:  # no log yet, or it was just removed
            return False
        if size < self.pages * self._page_size or self._db is None:
            return False
        try:
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:  # busy, or the disk: the next look tries again
            if not self._failed:
                log.warning("the ledger's checkpoint failed (tried again): %s", exc)
                self._failed = True
            return False
        self._failed = False
        return True

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()
