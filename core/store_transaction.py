"""The transaction both SQL stores give: one at a time per connection, joined by every block
opened inside it (and by blocks of other tasks meanwhile), committed when the outermost block
ends without an exception and rolled back when it raises.

Each backend's connection (`core.sqlite.connection`, `core.postgres.connection`) says how to
begin, commit and roll back; the nesting is here, once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["Nested"]


class Nested:
    """`transaction()` over a backend's `_begin`, `_commit` and `_rollback`."""

    _depth = 0
    _opened = 0  # transactions begun: a joined block ending counts only in its own

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """One transaction; nested blocks join the outer one. A block another task joined
        with and that outlives it (the outer one has committed) leaves the count alone."""
        if self._depth:
            joined = self._opened
            self._depth += 1
            try:
                yield
            finally:
                if joined == self._opened and self._depth:
                    self._depth -= 1
            return
        self._opened += 1
        self._depth = 1  # before the first await, so a task starting meanwhile joins
        try:
            await self._begin()
        except BaseException:
            self._depth = 0
            raise
        try:
            yield
        except BaseException:
            self._depth = 0
            await self._rollback()
            raise
        self._depth = 0
        await self._commit()

    async def _begin(self) -> None:
        raise NotImplementedError

    async def _commit(self) -> None:
        """Commit; raises `StoreError` when the database refuses (nothing is then kept)."""
        raise NotImplementedError

    async def _rollback(self) -> None:
        raise NotImplementedError
