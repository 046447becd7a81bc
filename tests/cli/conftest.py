"""Shared setup of the `c2a` command's tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _root_logger_restored() -> Iterator[None]:
    """`c2a run` configures the process's logging; keep that from leaking into other tests."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
