"""The store contract's one fixture: `backend`, parametrised over every `Store` there is (today
SQLite), so each test under this folder runs against each of them.

A test writes its scenario as an `async def` taking a `Store` and hands it to `backend.run`,
which opens a store on the test's own database, runs the scenario, and closes the store.
Calling `run` again opens the same database afresh, as a restart would. A second backend is one
more class with `run` in `store_backends.py`, and one more entry in its `BACKENDS`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from store_backends import BACKENDS, Backend


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return BACKENDS[request.param](tmp_path)
