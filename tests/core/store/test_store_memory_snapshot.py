"""The memory saved at a clean stop, on each backend: a start that finds it reads it back and
folds only the records after it, and remembers and decides as a start folding the whole
ledger does; it is read once; one of another version, or one that cannot be read, or that
names anything but the memory's own classes, is not used, and the ledger is folded."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from types import FunctionType
from typing import Any

import pytest
from builders import LEAD, local_workspace, slack_body
from builders import slack_message as said
from store_backends import Backend, in_memory
from test_store_engine_restart import bodies, decided, folded, ingest_all, memory

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.engine import Engine
from core.memory_snapshot import KEPT, memory_of, memory_version
from core.store import Snapshot, Store

START = parse_time("2026-01-01T00:00:01Z")
NEXT = said("1767225606.000100", f"<@{LEAD}> and the dashboards?")
# A flat channel's exchange, for continuity's records: a person names the lead, the lead
# answers in the channel, the person goes on without a name.
EXCHANGE = [
    said("1767225610.000100", "lead: is staging up?", channel="C0FLAT"),
    said("1767225611.000100", "yes, since nine", user=LEAD, channel="C0FLAT"),
    said("1767225612.000100", "great, and prod?", channel="C0FLAT"),
]


async def ingest(engine: Engine, *messages: dict[str, Any]) -> None:
    for message in messages:
        event = normalise(slack_body(message))
        assert event is not None
        async with engine.store.transaction():
            await engine.ingest(event)


async def stopped_cleanly(store: Store, clock: VirtualClock) -> dict[str, Any]:
    """The scripted conversation and a flat channel's exchange, then a clean stop's snapshot;
    what the engine remembered."""
    engine = await ingest_all(store, clock)
    await ingest(engine, *EXCHANGE)
    assert await engine.save_snapshot()
    return memory(engine) | {"talks": len(engine.state.continuity.talks)}


def test_a_start_from_the_snapshot_remembers_and_decides_as_the_stopped_engine_would(
    backend: Backend,
) -> None:
    clock = VirtualClock(START)

    async def started(store: Store) -> tuple[int, dict[str, Any], list[tuple[str, str, str]]]:
        engine = Engine(local_workspace(), store, clock)
        count = await engine.start()
        remembered = memory(engine) | {"talks": len(engine.state.continuity.talks)}
        return count, remembered, await decided(engine, NEXT)

    async def never_stopped(store: Store) -> list[tuple[str, str, str]]:
        engine = await ingest_all(store, clock)
        await ingest(engine, *EXCHANGE)
        return await decided(engine, NEXT)

    remembered = backend.run(lambda store: stopped_cleanly(store, clock))
    assert remembered["talks"] and remembered["messages"] and remembered["obligations"]
    count, restored, next_decisions = backend.run(started)
    assert count == 0  # nothing after the snapshot: no record folded
    assert restored == remembered
    assert next_decisions == asyncio.run(in_memory(never_stopped))


def test_records_after_the_snapshot_are_folded_in_as_a_whole_fold_has_them(
    backend: Backend,
) -> None:
    """Records appended after the snapshot was saved (another process sharing the ledger, or
    one writing it while this host was stopped) are folded onto it, as `catch_up` folds them."""
    clock = VirtualClock(START)

    async def scenario(store: Store) -> None:
        engine = await ingest_all(store, clock)
        assert await engine.save_snapshot()
        await ingest(engine, *EXCHANGE)
        whole = Engine(local_workspace(), store, clock)
        assert await whole.rebuild() == len(bodies()) + len(EXCHANGE)
        restarted = Engine(local_workspace(), store, clock)
        assert await restarted.start() == len(EXCHANGE)
        assert folded(restarted) == folded(whole)
        assert restarted.folded == whole.folded
        assert await decided(restarted, NEXT) == await decided(whole, NEXT)

    backend.run(scenario)


def test_a_snapshot_is_read_once_so_a_later_crash_folds_the_ledger(backend: Backend) -> None:
    clock = VirtualClock(START)

    async def twice(store: Store) -> tuple[int, int]:
        first = await Engine(local_workspace(), store, clock).start()
        assert await store.take_snapshot() is None
        return first, await Engine(local_workspace(), store, clock).start()

    backend.run(lambda store: stopped_cleanly(store, clock))
    assert backend.run(twice) == (0, len(bodies()) + len(EXCHANGE))


class Runs:
    """Whether a snapshot's bytes ran anything: a file they would create."""

    def __init__(self, folder: Path) -> None:
        self.marker = folder / "ran"

    def __reduce__(self) -> tuple[Any, ...]:
        return os.system, (f"touch {self.marker}",)


def refused(folder: Path) -> Iterator[tuple[str, bytes | None, str]]:
    """Snapshots a start must not use: the reason it gives, the bytes (None: the engine's
    own), and the version they claim (the right one unless named)."""
    yield "another version's", None, "0" * 64
    yield "unreadable: UnpicklingError", b"\x80\x05 not a pickle", ""
    hostile = pickle.dumps({"state": {"messages": Runs(folder)}, "digested": {}})
    yield "posix.system is not part of the memory", hostile, ""
    truncated = pickle.dumps({"state": {}, "digested": {}})[:-3]
    yield "unreadable", truncated, ""
    yield "other parts than the memory has", pickle.dumps({"state": {}, "digested": {}}), ""


@pytest.mark.parametrize("case", range(5))
def test_a_snapshot_of_another_version_or_unreadable_is_refused_and_the_ledger_folded(
    case: int, backend: Backend, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = VirtualClock(START)
    said_why, data, version = list(refused(tmp_path))[case]

    async def spoilt(store: Store) -> None:
        await stopped_cleanly(store, clock)
        saved = await store.take_snapshot()
        assert saved is not None
        await store.save_snapshot(
            Snapshot(saved.seq, version or saved.version, saved.data if data is None else data)
        )

    async def started(store: Store) -> tuple[int, dict[str, Any]]:
        engine = Engine(local_workspace(), store, clock)
        return await engine.start(), folded(engine)

    async def whole(store: Store) -> dict[str, Any]:
        engine = Engine(local_workspace(), store, clock)
        await engine.rebuild()
        return folded(engine)

    backend.run(spoilt)
    caplog.set_level(logging.INFO, logger="core.memory_snapshot")
    count, remembered = backend.run(started)
    assert count == len(bodies()) + len(EXCHANGE)
    assert remembered == backend.run(whole)
    assert said_why in caplog.text
    assert not (tmp_path / "ran").exists()


def test_the_version_is_the_code_s_and_the_manifest_s(tmp_path: Path) -> None:
    workspace = local_workspace()
    renamed = dataclasses.replace(
        workspace, manifest=workspace.manifest.model_copy(update={"workspace": "other"})
    )
    assert memory_version(workspace) == memory_version(local_workspace())
    assert memory_version(renamed) != memory_version(workspace)
    with pytest.raises(ValueError, match="another version"):
        memory_of(Snapshot(1, memory_version(renamed), b""), workspace)


def held(roots: list[object]) -> tuple[set[type], set[object]]:
    """The types of the objects reachable from `roots` through their references, and the
    functions among them (not followed: their globals are whole modules)."""
    seen: set[int] = set()
    types: set[type] = set()
    functions: set[object] = set()
    stack = list(roots)
    while stack:
        found = stack.pop()
        if id(found) in seen or isinstance(found, type):
            continue
        seen.add(id(found))
        if isinstance(found, FunctionType):
            functions.add(found)
            continue
        types.add(type(found))
        stack.extend(gc.get_referents(found))
    return types, functions


def test_everything_the_memory_holds_is_a_class_a_snapshot_may_name(backend: Backend) -> None:
    """A new kind of record in the state, not added to `KEPT`, would make every snapshot
    unreadable (each start would fold the ledger, and warn): this names it first."""
    clock = VirtualClock(START)

    async def scenario(store: Store) -> tuple[set[type], set[object]]:
        engine = await ingest_all(store, clock)
        await ingest(engine, *EXCHANGE)
        state = engine.state
        saved = [getattr(state, f.name) for f in dataclasses.fields(state) if f.name not in REBUILT]
        return held([*saved, engine.followup.digested])

    types, functions = backend.run(scenario)
    plain = {str, int, float, bool, bytes, type(None), dict, list, tuple, set, frozenset}
    assert {t for t in types - plain if t not in KEPT} == set()
    assert functions <= KEPT


REBUILT = frozenset({"workspace", "scorer", "names", "claims"})
