"""The transaction both SQL stores give: one at a time per connection, joined by every block
opened inside it (and by blocks of other tasks meanwhile), committed when the outermost block
ends without an exception and rolled back when it raises.

A block another task opened while the transaction was open ends only once that transaction
has committed, and raises `StoreError` if it was rolled back instead: whoever leaves a block
may count on what it wrote being durable (a harness's delivery attempt is noted before the
delivery is sent), whichever task owns the transaction. Only a task's outermost block waits so;
the blocks it opens inside it end at once, else the task would wait for a commit that waits
for it to leave. The task that opened the transaction commits only once every other task's
block has left it. `durable` waits the same way with no block: for whatever transaction is
open or ending to be committed.

Another task's block, and (on a backend that awaits its statements) its statements, wait for
the transaction to have begun before they run, so nothing it writes comes before `BEGIN` or
before what `_begin` takes first (PostgreSQL's lock on a shared ledger).

Each backend's connection (`core.sqlite.connection`, `core.postgres.connection`) says how to
begin, commit and roll back; the nesting is here, once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from core.errors import StoreError

__all__ = ["Nested"]


class Nested:
    """`transaction()` over a backend's `_begin`, `_commit` and `_rollback`."""

    _depth = 0
    _generation = 0  # one more for each transaction begun
    _owner: asyncio.Task[Any] | None = None
    # The outcome of the open transaction, for blocks of other tasks that joined it.
    _joined: asyncio.Future[None] | None = None
    # Set when the last block of another task inside the open transaction has left it.
    _left: asyncio.Event | None = None
    # While a transaction commits or rolls back (`_ends`): its outcome, once one is awaited.
    _ends = False
    _ending: asyncio.Future[None] | None = None
    # While the open transaction begins (`_begins`): that it has, once it is awaited.
    _begins = False
    _beginning: asyncio.Future[None] | None = None
    # The blocks each task other than the owner has open in the open transaction.
    _blocks: dict[asyncio.Task[Any] | None, int] | None = None

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """One transaction; nested blocks join the outer one."""
        if self._depth:
            ended = self._join()
            generation = self._generation
            self._depth += 1
            try:
                await self._started()
                yield
            finally:
                self._leave(generation)
            if ended is not None:
                await asyncio.shield(ended)
            return
        self._depth = 1  # before the first await, so a task starting meanwhile joins
        self._generation += 1
        self._owner = asyncio.current_task()
        self._begins = True
        try:
            await self._begin()
        except BaseException as exc:
            self._detach()
            _settle(self._begun(), "could not begin", exc)
            _settle(self._ended(), "could not begin", exc)
            raise
        _settle(self._begun(), None)
        try:
            yield
            await self._others_left()
        except BaseException as exc:
            self._detach()
            try:
                await self._rollback()
            finally:
                _settle(self._ended(), "was rolled back", exc)
            raise
        self._detach()
        try:
            await self._commit()
        except BaseException as exc:
            _settle(self._ended(), "could not commit", exc)
            raise
        _settle(self._ended(), None)

    async def durable(self) -> None:
        """Return once what was written so far is committed: at once when no transaction is
        open or ending; else when it has ended (`StoreError` if it was rolled back). In the
        open transaction's own task, at once: it commits after the task leaves it."""
        if self._depth:
            ended = self._join()
        elif self._ends:
            if self._ending is None:
                self._ending = _outcome()
            ended = self._ending
        else:
            return
        if ended is not None:
            await asyncio.shield(ended)

    async def _started(self) -> None:
        """In a task other than the one beginning the open transaction, wait until it has
        begun (`StoreError` if it could not)."""
        if not self._begins or asyncio.current_task() is self._owner:
            return
        if self._beginning is None:
            self._beginning = _outcome()
        await asyncio.shield(self._beginning)

    def _join(self) -> asyncio.Future[None] | None:
        """What a block joining the open transaction waits for at its end: nothing when the
        task owning the transaction opened it, or when the task is inside a block of its own
        already (its outermost block waits), else the transaction's outcome."""
        task = asyncio.current_task()
        if task is self._owner:
            return None
        if self._blocks is None:
            self._blocks = {}
        opened = self._blocks.get(task, 0)
        self._blocks[task] = opened + 1
        if opened:
            return None
        if self._joined is None:
            self._joined = _outcome()
        return self._joined

    def _leave(self, generation: int) -> None:
        """A joined block ends; one of a transaction already ended (rolled back while it was
        inside) changes nothing of the next one's."""
        if generation != self._generation or not self._depth:
            return
        task = asyncio.current_task()
        if self._blocks is not None and task in self._blocks:
            self._blocks[task] -= 1
            if not self._blocks[task]:
                del self._blocks[task]
        self._depth -= 1
        if self._depth == 1 and self._left is not None:
            self._left.set()

    async def _others_left(self) -> None:
        """Wait until no block of another task is still inside the transaction, so that none
        of its writes comes after the commit."""
        while self._depth > 1:
            self._left = asyncio.Event()
            try:
                await self._left.wait()
            finally:
                self._left = None

    def _detach(self) -> None:
        """The transaction is ending: nothing joins it any more (the next block begins anew);
        what joined it, and `durable` callers until it has ended, wait on `_ending`."""
        self._depth = 0
        self._owner = None
        self._blocks = None
        self._ending, self._joined = self._joined, None
        self._ends = True

    def _begun(self) -> asyncio.Future[None] | None:
        """The transaction has begun (or could not): what waits for that, to be told it."""
        beginning, self._beginning = self._beginning, None
        self._begins = False
        return beginning

    def _ended(self) -> asyncio.Future[None] | None:
        """The transaction has ended: what waits on its outcome, to be told it."""
        ending, self._ending = self._ending, None
        self._ends = False
        return ending

    async def _begin(self) -> None:
        raise NotImplementedError

    async def _commit(self) -> None:
        """Commit; raises `StoreError` when the database refuses (nothing is then kept)."""
        raise NotImplementedError

    async def _rollback(self) -> None:
        raise NotImplementedError


def _settle(
    joined: asyncio.Future[None] | None, failure: str | None, cause: BaseException | None = None
) -> None:
    """Tell the blocks that joined a transaction how it ended (with the details of the
    `StoreError` that ended it, if one did)."""
    if joined is None:
        return
    if failure is None:
        joined.set_result(None)
    else:
        details = cause.details if isinstance(cause, StoreError) else None
        joined.set_exception(StoreError(f"the transaction this write joined {failure}", details))


def _outcome() -> asyncio.Future[None]:
    """A transaction's outcome, for those that wait on it."""
    outcome = asyncio.get_running_loop().create_future()
    outcome.add_done_callback(_retrieved)
    return outcome


def _retrieved(joined: asyncio.Future[None]) -> None:
    """A joined block cancelled while it waited leaves no unread exception behind."""
    if not joined.cancelled():
        joined.exception()
