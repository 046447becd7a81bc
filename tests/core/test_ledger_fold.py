"""A whole ledger is folded with the garbage collector's thresholds raised, and what was set
before comes back once the fold ends, also when several folds overlap or one fails."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from datetime import datetime

import pytest
from builders import local_workspace

from core.clock import VirtualClock, parse_time
from core.engine import Engine
from core.ledger_fold import FOLD_THRESHOLDS, few_collections
from core.sqlite_store import SQLiteStore


@pytest.fixture(autouse=True)
def thresholds() -> Iterator[tuple[int, int, int]]:
    """CPython's defaults for the test, and the test's caller's back after it."""
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield (700, 10, 10)
    gc.set_threshold(*before)


def test_the_thresholds_are_raised_in_the_block_and_put_back_after_it() -> None:
    with few_collections():
        assert gc.get_threshold() == FOLD_THRESHOLDS
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_folds_put_back_what_was_set_before_the_first() -> None:
    outer, inner = few_collections(), few_collections()
    outer.__enter__()
    inner.__enter__()
    outer.__exit__(None, None, None)  # the first to start ends first
    assert gc.get_threshold() == FOLD_THRESHOLDS
    inner.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_threshold_is_never_lowered_and_a_failed_fold_puts_back_too() -> None:
    gc.set_threshold(100_000, 5, 1000)
    during = []

    def failing_fold() -> None:
        with few_collections():
            during.append(gc.get_threshold())
            raise RuntimeError("the fold failed")

    with pytest.raises(RuntimeError, match="the fold failed"):
        failing_fold()
    assert during == [(100_000, 20, 1000)]
    assert gc.get_threshold() == (100_000, 5, 1000)


def test_a_rebuild_folds_with_the_thresholds_raised() -> None:
    seen: list[tuple[int, int, int]] = []

    class Watched(SQLiteStore):
        async def claims(self, now: datetime) -> dict[str, tuple[str, datetime]]:
            seen.append(gc.get_threshold())  # read once the ledger is folded
            return await super().claims(now)

    async def scenario() -> None:
        store = Watched()
        await store.open()
        try:
            await Engine(
                local_workspace(), store, VirtualClock(parse_time("2026-01-01T00:00:00Z"))
            ).rebuild()
        finally:
            await store.close()

    asyncio.run(scenario())
    assert seen == [FOLD_THRESHOLDS]
    assert gc.get_threshold() == (700, 10, 10)
