"""Garbage collection tuned for `c2a run`, a long-running asyncio server.

With CPython's default thresholds (700, 10, 10) a loop taking in hundreds of platform events a
second runs a young collection every few hundred net allocations and a full one, which walks
every live object (modules, the manifest, the engine's state folded from the ledger), often
enough to pause the loop for tens of milliseconds: those pauses were the live path's p99.

Once the run has started, `tune` collects what start-up left behind, then freezes every object
still alive (`gc.freeze()`: never walked again; start-up objects live as long as the process
anyway) and raises the thresholds, so young collections come rarer and the full ones find
little to walk. `restore` undoes both: `c2a run` calls it on the way out, so a process that
embeds a run (its tests) gets its own settings back.
"""

from __future__ import annotations

import gc

__all__ = ["THRESHOLDS", "restore", "tune"]

# Young objects per collection, young collections per middle one, middle per full one. A young
# generation of 50,000 is a millisecond or two to walk; full collections become rare, and cheap
# once start-up's objects are frozen.
THRESHOLDS = (50_000, 20, 100)

_saved: list[tuple[int, int, int]] = []


def tune(thresholds: tuple[int, int, int] = THRESHOLDS) -> None:
    """Collect, freeze what survives and raise the thresholds; a second call only raises the
    thresholds again (what `restore` goes back to is what was set before the first)."""
    if not _saved:
        first, second, third = gc.get_threshold()
        _saved.append((first, second, third))
    gc.collect()
    gc.freeze()
    gc.set_threshold(*thresholds)


def restore() -> None:
    """Back to the thresholds before `tune`, start-up's objects watched again; nothing when
    `tune` was not called."""
    if not _saved:
        return
    gc.set_threshold(*_saved.pop())
    gc.unfreeze()
