"""`c2a run` tunes the collector once started and gives the process its settings back."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from c2a import gc_tuning


@pytest.fixture(autouse=True)
def _untouched() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc_tuning.restore()
    gc.set_threshold(*before)
    gc.unfreeze()


def test_tuning_freezes_what_start_up_made_and_raises_the_thresholds() -> None:
    before = gc.get_threshold()
    kept = [object() for _ in range(10)]
    gc_tuning.tune()
    assert gc.get_threshold() == gc_tuning.THRESHOLDS
    assert gc.get_freeze_count() > len(kept)
    gc_tuning.restore()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_tuning_twice_restores_to_what_was_there_first() -> None:
    before = gc.get_threshold()
    gc_tuning.tune()
    gc_tuning.tune((1000, 10, 10))
    assert gc.get_threshold() == (1000, 10, 10)
    gc_tuning.restore()
    assert gc.get_threshold() == before


def test_restoring_without_tuning_changes_nothing() -> None:
    gc.set_threshold(123, 4, 5)
    gc_tuning.restore()
    assert gc.get_threshold() == (123, 4, 5)
