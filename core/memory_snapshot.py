"""The engine's memory saved when a host stops cleanly, so that the next start reads it back
instead of folding the whole ledger again (`Engine.start`).

A start folds every ledger record into fresh memory (`core.ledger_fold`): some 60 µs a record,
more than a minute at a million. What the memory keeps is bounded (`core.state`), so at a clean
stop it is written whole (`snapshot_of`), with the sequence number of the last record it holds;
the next start reads it back (`memory_of`) and folds only the records after that number, as
`Engine.catch_up` folds what other processes appended. It is used:

- **once**: the start that finds it also deletes it, in one transaction (`Snapshots.take_snapshot`),
  so a host that later dies without a clean stop folds the whole ledger at its next start, never
  reading a memory older than what it did since;
- **by the same code and workspace only**: its `version` is a digest of core's source, the
  manifest and the Python version (`memory_version`); with any other, or one that cannot be read,
  the start folds the whole ledger, as it always did.

What it holds is the `State` (less what a start builds again: the workspace and what comes from
it, and the claims, read from the store at every fold) and the follow-up's digests. It is a
pickle read back by an unpickler that builds only the memory's own classes (`KEPT`), so bytes
written into the database by anyone else can at worst make a memory the start refuses, never
run anything. It holds what the ledger holds (texts redacted at ingest), in the same database.
"""

from __future__ import annotations

import hashlib
import io
import logging
import pickle
import sys
from collections import OrderedDict, deque
from dataclasses import fields, is_dataclass
from datetime import datetime, timedelta, timezone
from functools import cache
from pathlib import Path
from typing import Any, Final

from core.continuity import Burst, Continuity, Mark, Talk, Window
from core.decision import Decision, Directedness, Disposition, InjectionMode, Policy, Priority
from core.events import Conversation, ConversationKind
from core.manifest import Workspace
from core.reactions import ReactionMarks
from core.state import State
from core.state_recent import Recent
from core.state_records import Chain, LateQuestion, MessageRecord, ThreadRecord, owned
from core.store_records import Snapshot

__all__ = ["KEPT", "Digested", "memory_of", "memory_version", "readable", "snapshot_of"]

log = logging.getLogger(__name__)

Digested = dict[str, tuple[datetime | None, int]]
"""The follow-up's digests: per agent, when its last was sent (None: read from the ledger) and
the last sequence number it summarised (`core.followup.FollowUp`)."""

# Built again from the workspace at every start, or read from the store at every fold.
_REBUILT: Final = frozenset({"workspace", "scorer", "names", "claims"})
_PROTOCOL: Final = 5

KEPT: Final[frozenset[object]] = frozenset(
    {
        Burst,
        Chain,
        Continuity,
        Conversation,
        ConversationKind,
        Decision,
        Directedness,
        Disposition,
        InjectionMode,
        LateQuestion,
        Mark,
        MessageRecord,
        Policy,
        Priority,
        ReactionMarks,
        Recent,
        Talk,
        ThreadRecord,
        Window,
        owned,
        OrderedDict,
        datetime,
        deque,
        timedelta,
        timezone,
    }
)
"""Everything a snapshot may name: the memory's own classes (and `owned`, what keeps a thread
an agent owns), and the standard library's containers and times they hold."""


def _by_fields(record: Any) -> tuple[type, tuple[Any, ...]]:
    """A record of the memory as its class and its fields, made again by its constructor: by
    default pickle keeps a slotted object's fields in a dict of its own, one a record, all held
    by the unpickler until the whole snapshot is read (twice the memory's size at its peak)."""
    kind = type(record)
    return kind, tuple(getattr(record, name) for name in _FIELDS[kind])


_FIELDS: Final = {
    kind: tuple(f.name for f in fields(kind))
    for kind in KEPT
    if isinstance(kind, type) and is_dataclass(kind)
}
_BY_FIELDS: Final = dict.fromkeys(_FIELDS, _by_fields)


def _kept_fields(state: State) -> set[str]:
    """The parts of the memory a snapshot holds: all but what a start builds again."""
    return {f.name for f in fields(state) if f.name not in _REBUILT}


def snapshot_of(state: State, digested: Digested, seq: int) -> Snapshot:
    """The snapshot of `state` and the follow-up's `digested`, holding the ledger up to `seq`."""
    kept = {name: getattr(state, name) for name in _kept_fields(state)}
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=_PROTOCOL)
    pickler.dispatch_table = _BY_FIELDS
    pickler.dump({"state": kept, "digested": digested})
    return Snapshot(seq, memory_version(state.workspace), out.getvalue())


def memory_of(snapshot: Snapshot, workspace: Workspace) -> tuple[State, Digested]:
    """The memory a snapshot holds, for `workspace`. Raises ValueError, saying why, when it is
    another version's or cannot be read: the caller folds the ledger instead."""
    if snapshot.version != memory_version(workspace):
        raise ValueError("written by another version of c2a or for another manifest")
    return _loaded(snapshot, workspace)


def _loaded(snapshot: Snapshot, workspace: Workspace) -> tuple[State, Digested]:
    """`memory_of`, its version checked already."""
    try:
        body = _Unpickler(io.BytesIO(snapshot.data)).load()
        state = State(workspace)
        if set(body["state"]) != _kept_fields(state):
            raise ValueError("it holds other parts than the memory has")
        for name, value in body["state"].items():
            setattr(state, name, value)
        digested: Digested = dict(body["digested"])
    except Exception as exc:  # any byte may be wrong: never more than a refused snapshot
        raise ValueError(f"unreadable: {type(exc).__name__}: {exc}") from exc
    return state, digested


def readable(snapshot: Snapshot, workspace: Workspace) -> tuple[State, Digested] | None:
    """`memory_of`, or None when the snapshot cannot serve, said in one line of the log: as
    information after an upgrade or a change of the manifest, as a warning when it is unreadable."""
    if snapshot.version != memory_version(workspace):
        log.info("the memory saved at the last stop is another version's: folding the ledger")
        return None
    try:
        memory = _loaded(snapshot, workspace)
    except ValueError as exc:
        log.warning("the memory saved at the last stop is %s: folding the ledger", exc)
        return None
    log.info(
        "the memory saved at the last stop is read back: folding the ledger after %d", snapshot.seq
    )
    return memory


@cache
def _source_digest() -> str:
    """A digest of every module of `core`: the code that folds and keeps the memory."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def memory_version(workspace: Workspace) -> str:
    """What a snapshot must have been written by: this code, this manifest, this Python."""
    digest = hashlib.sha256(_source_digest().encode())
    digest.update(workspace.manifest.model_dump_json().encode())
    digest.update(f"{sys.version_info[0]}.{sys.version_info[1]}/{_PROTOCOL}".encode())
    return digest.hexdigest()


class _Unpickler(pickle.Unpickler):
    """Builds only what `KEPT` names; any other name refuses the whole snapshot."""

    def find_class(self, module: str, name: str) -> Any:
        found = getattr(sys.modules.get(module), name, None)
        if found is None or found not in KEPT:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of the memory")
        return found
