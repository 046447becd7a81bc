"""What a long-running host reads again and again reads an index, not a whole table, on every
backend: the outbox's due rows (each drain), the deliveries still owing an answer (the
follow-up sweep, every few seconds), an agent's digest items, what is pending for an agent,
the queue gauges of `/metrics` and, where hosts share the ledger, the live claims. Those
tables grow with every message for as long as the ledger lives; a scan of a million-row ledger
blocked the event loop for 0.1-0.45 s each time (docs/benchmarks.md, "What a long-running host
reads again").

Each query is caught as the store runs it, with its arguments, and its plan asked for: SQLite's
`EXPLAIN QUERY PLAN`, PostgreSQL's `EXPLAIN` with sequential scans turned off (so that the plan
shows the index it would use on a big table). Reading a whole table, or the whole of an index
that is not partial, fails."""

from __future__ import annotations

import json
import re
from typing import Any

from store_backends import Backend

from c2a.metrics import CountedStore, Metrics
from core.clock import parse_time
from core.sqlite_store import SQLiteStore
from core.store import Store

NOW = parse_time("2026-01-01T00:10:00Z")
GROWING = ("events", "receipts", "deliveries", "outbox", "audit", "claims")


async def reread(store: Store) -> None:
    """Every query of the list above, once."""
    await store.overdue("2026-01-01T00:00:00Z")
    await store.outbox_take("host")
    await store.seen_by("lead", after_seq=0, mode="digest", limit=1000)
    await store.pending("lead")
    if store.shared:  # read before each event is decided (`Engine.catch_up`)
        await store.claims(NOW)
    counted = CountedStore(store, Metrics(), "acme")
    await counted.queue_depths(["lead"])
    await counted.delivery_lag(["lead"], NOW)


class Recording:
    """A SQLite connection that notes each statement it runs, with its arguments."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.ran: list[tuple[str, tuple[Any, ...]]] = []

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> Any:
        self.ran.append((sql, tuple(args)))
        return self.db.execute(sql, args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


async def sqlite_scans(store: SQLiteStore) -> list[str]:
    recording = Recording(store.db)
    store._db = recording  # type: ignore[assignment]
    try:
        await reread(store)
    finally:
        store._db = recording.db
    assert len(recording.ran) >= 7
    scans = []
    for sql, args in recording.ran:
        for row in store.db.execute(f"EXPLAIN QUERY PLAN {sql}", args):
            # `SCAN t` reads every row of t; `SCAN t USING INDEX i` only i's.
            if re.fullmatch(r"SCAN (\w+)", row[3]):
                scans.append(f"{row[3]}: {sql}")
    return scans


async def postgres_scans(store: Store) -> list[str]:
    db = store.db  # type: ignore[attr-defined]
    execute = db.execute
    ran: list[tuple[str, Any]] = []

    async def recorded(query: str, args: Any = None) -> Any:
        ran.append((query, args))
        return await execute(query, args)

    db.execute = recorded
    try:
        await reread(store)
    finally:
        del db.execute
    assert len(ran) >= 7
    await db.execute("SET enable_seqscan = off")
    partial = {
        name
        for name, definition in await (
            await db.execute("SELECT indexname, indexdef FROM pg_indexes")
        ).fetchall()
        if " WHERE " in definition
    }
    scans = []
    for query, args in ran:
        ((plan,),) = await (await db.execute(f"EXPLAIN (FORMAT JSON) {query}", args)).fetchall()
        if isinstance(plan, str):  # the store reads `json` as text
            plan = json.loads(plan)
        scans += [f"{scan}: {query}" for scan in whole_reads(plan[0]["Plan"], partial)]
    return scans


def whole_reads(node: dict[str, Any], partial: set[str]) -> list[str]:
    """The reads of a whole growing table or index in a PostgreSQL plan: a sequential scan, or
    an index read without a condition, unless the index is partial (it holds few rows)."""
    found = []
    if node["Node Type"] == "Seq Scan" and node["Relation Name"] in GROWING:
        found.append(f"Seq Scan on {node['Relation Name']}")
    index = node.get("Index Name")
    if index is not None and "Index Cond" not in node and index not in partial:
        found.append(f"{node['Node Type']} of all of {index}")
    for child in node.get("Plans", []):
        found += whole_reads(child, partial)
    return found


def test_what_a_running_host_reads_again_reads_an_index(backend: Backend) -> None:
    async def scenario(store: Store) -> list[str]:
        if isinstance(store, SQLiteStore):
            return await sqlite_scans(store)
        return await postgres_scans(store)

    assert backend.run(scenario) == []
