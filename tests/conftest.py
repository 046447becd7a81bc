"""Shared test setup: makes `tests/builders.py` importable, keeps proxies out of the way, and
gives every test the root logger it found, and keeps the `local` backend from using a model
server that happens to run on this machine (a test that wants one names its port in
`C2A_MODEL_PORTS`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

import pytest

for _name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
    os.environ.pop(_name, None)
os.environ["C2A_MODEL_PORTS"] = ""
os.environ.pop("C2A_MODEL_INSTALL", None)


@pytest.fixture(autouse=True)
def _root_logger_restored() -> Iterator[None]:
    """`c2a run` and `c2a check` configure the process's logging, with a handler on the stream
    that was stderr then (a test's capture, closed after it); keep that from leaking into the
    tests after, where it would print "--- Logging error ---" for every record."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
