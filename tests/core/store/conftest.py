"""The store contract's fixtures: `backend`, parametrised over every `Store` there is (SQLite
and PostgreSQL), so each test under this folder runs against each of them, and
`postgres_cluster`, the session's throwaway PostgreSQL server (`postgres_cluster.py`).

A test writes its scenario as an `async def` taking a `Store` and hands it to `backend.run`,
which opens a store on the test's own database, runs the scenario, and closes the store.
Calling `run` again opens the same database afresh, as a restart would. Another backend is one
more class with `run` in `store_backends.py`, and one more entry in its `BACKENDS`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_cluster import Cluster, NotInstalled
from store_backends import BACKENDS, Backend


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return BACKENDS[request.param](request, tmp_path)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """One PostgreSQL server for the whole session, started when a test first needs it; a
    missing PostgreSQL or psycopg fails the test with how to install it."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.fail("psycopg is not installed: pip install -e '.[dev]' (or `make test`)")
    try:
        cluster = Cluster()
    except NotInstalled as exc:
        pytest.fail(str(exc))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
