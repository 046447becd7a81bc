"""Group commit: the events that arrive together are written to the ledger in one transaction.

`GroupCommit.submit` queues one normalised event and waits. One committer task, started when
something is queued and gone when nothing is, takes what is queued (at most `limit` events),
ingests them in the order they came in one transaction, commits, and only then, in that
order, hands each event's emissions to the sink and resolves its waiter: a platform is still
acknowledged after its own event's commit, and the emissions still go out after it. The
committer never waits for a batch to fill: it takes what is there when the previous commit
ends, so events that arrive while a commit runs share the next one; an event that finds
nothing committing is committed by its own receive, with those queued in the same turn of
the loop, without the committer.

A failure of the ledger (`StoreError`) inside the transaction rolls the whole batch back and
fails every waiter of that batch with that exception, as one event's failure failed its own
receive before; the batch after it starts afresh. Any other failure (the engine's, on one
event) rolls the batch back too, and then each of its events is committed in a transaction of
its own, so only the event it fails on fails, with `IngestFailed` (its cause the failure):
nothing of that event is in the ledger, and taking it again would fail the same way. A
failure of the sink fails only the waiter whose emissions it was handed, as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Final

from core.emission import Emission, Outcome
from core.errors import C2AError, StoreError
from core.events import ChatEvent

__all__ = ["BATCH_LIMIT", "GroupCommit", "IngestFailed"]

BATCH_LIMIT: Final = 64
"""The most events one transaction takes: enough for a burst, few enough that the first
event of a batch is not kept waiting for the last one's decisions."""


class IngestFailed(C2AError, code="ingest_failed"):
    """The engine failed on one event, committed alone: rolled back, not in the ledger. A bug,
    not the ledger's: its cause (`__cause__`) is what failed."""


Transaction = Callable[[], AbstractAsyncContextManager[None]]
Ingest = Callable[[ChatEvent, str | None], Awaitable[Outcome]]
Sink = Callable[[list[Emission]], Awaitable[None]]


@dataclass(slots=True)
class _Waiting:
    """One queued event, the agent whose connection received it, and its waiter."""

    event: ChatEvent
    via: str | None
    done: asyncio.Future[Outcome]


class GroupCommit:
    """Writes queued events in shared transactions (`transaction`: the engine's, so that one
    rolled back has the engine fold its memory again), serialised with `writer`.

    `ingest` and `sink` are called through, not held: whoever owns them may swap what they
    reach (a reload replaces the engine's parts) between two batches."""

    def __init__(
        self,
        transaction: Transaction,
        writer: asyncio.Lock,
        ingest: Ingest,
        sink: Sink,
        *,
        limit: int = BATCH_LIMIT,
    ) -> None:
        if limit < 1:
            raise ValueError("a batch holds at least one event")
        self.transaction = transaction
        self.writer = writer
        self.ingest = ingest
        self.sink = sink
        self.limit = limit
        self._queue: list[_Waiting] = []
        self._committer: asyncio.Task[None] | None = None
        self._inline = False

    async def submit(self, event: ChatEvent, via: str | None) -> Outcome:
        """Queue `event` and return its outcome once it is committed and its emissions are
        with the sink; raises what failed its batch's transaction, or its own sink call.
        A caller cancelled while waiting leaves the event to be committed all the same."""
        done: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        waiting = _Waiting(event, via, done)
        if self._idle():
            return await self._commit_here(waiting)
        self._queue.append(waiting)
        if self._committer is None and not self._inline:
            self._start()
        return await asyncio.shield(done)

    def _idle(self) -> bool:
        return self._committer is None and not self._inline and not self._queue

    async def _commit_here(self, waiting: _Waiting) -> Outcome:
        """Nothing is committing: the caller's own task leads the next batch. It lets the
        tasks ready to run now queue their events first (one turn of the loop: receives of
        one burst are ready together), then commits them with its own, sparing the hand-over
        to the committer and back; what queues after goes to the committer."""
        self._inline = True
        self._queue.append(waiting)
        batch: list[_Waiting] = []
        try:
            await asyncio.sleep(0)
            batch = self._queue[: self.limit]
            del self._queue[: self.limit]
            await self._commit(batch)
        except BaseException:
            _abandon(batch)  # the leader was cancelled: the others of its batch are not kept
            raise
        finally:
            self._inline = False
            if self._queue:
                self._start()
        return waiting.done.result()

    def _start(self) -> None:
        self._committer = asyncio.create_task(self._run(), name="group-commit")

    async def drain(self) -> None:
        """Wait until everything queued so far is committed (or has failed)."""
        while self._committer is not None:
            await asyncio.shield(self._committer)

    async def _run(self) -> None:
        batch: list[_Waiting] = []
        try:
            while self._queue:
                batch = self._queue[: self.limit]
                del self._queue[: self.limit]
                await self._commit(batch)
        except BaseException:
            # Stopped from outside (the loop is closing): nobody is left waiting forever.
            _abandon([*batch, *self._queue])
            self._queue.clear()
            raise
        finally:
            self._committer = None

    async def _commit(self, batch: list[_Waiting]) -> None:
        try:
            async with self.writer, self.transaction():
                outcomes = [await self.ingest(w.event, w.via) for w in batch]
        except StoreError as exc:
            for waiting in batch:
                waiting.done.set_exception(exc)
            return
        except Exception as exc:
            if len(batch) > 1:
                for waiting in batch:  # one event the engine fails on fails alone
                    await self._commit([waiting])
                return
            failed = IngestFailed(f"the engine failed on {batch[0].event.event_id}")
            failed.__cause__ = exc
            batch[0].done.set_exception(failed)
            return
        for waiting, outcome in zip(batch, outcomes, strict=True):
            if outcome.emissions:
                try:
                    await self.sink(outcome.emissions)
                except Exception as exc:
                    waiting.done.set_exception(exc)
                    continue
            waiting.done.set_result(outcome)


def _abandon(batch: list[_Waiting]) -> None:
    """Fail the waiters of a batch whose commit was interrupted (rolled back, or never begun):
    their adapters do not acknowledge, as on any ledger failure."""
    for waiting in batch:
        if not waiting.done.done():
            waiting.done.set_exception(StoreError("the commit was interrupted"))
