"""Group commit on the host's receive path: events that arrive while a commit runs are written
together in the next transaction, each receive returns only after its own event's commit, a
ledger failure fails only the batch it struck (the engine's failure on one event, only that
event), and the order of events is the order received."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from builders import LEAD, local_workspace, slack_body, slack_message

from c2a.host import Host
from core.clock import VirtualClock
from core.emission import Delivery, Emission, Outcome
from core.errors import StoreError
from core.events import ChatEvent
from core.manifest import Workspace
from core.sqlite_store import SQLiteStore


class Ledger(SQLiteStore):
    """An in-memory ledger that counts its commits, can hold the next one until `release`d,
    and can refuse the one it is asked to (`refuse_at`, counting attempts)."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.commits = 0
        self.committing = asyncio.Event()
        self.release: asyncio.Event | None = None
        self.attempts = 0
        self.sunk_after: list[int] = []  # commits ended when each sink call came
        self.refuse_at: int | None = None

    async def _commit(self) -> None:
        self.attempts += 1
        self.committing.set()
        if self.release is not None:
            release, self.release = self.release, None
            await release.wait()
        if self.attempts == self.refuse_at:
            await self._rollback()
            raise StoreError("cannot commit to the ledger: disk I/O error")
        await super()._commit()
        self.commits += 1

    async def texts(self) -> list[str]:
        return [str(entry.data["text"]) async for entry in self.ledger()]


def message(n: int) -> dict[str, Any]:
    event = slack_message(
        f"17672256{n:02d}.000100", f"<@{LEAD}> note {n}", channel="D0LEAD", channel_type="im"
    )
    return slack_body(event, via="lead")


Scenario = Callable[[Host, Ledger, list[list[Emission]]], Awaitable[None]]


def with_host(scenario: Scenario, batch: int = 64, workspace: Workspace | None = None) -> None:
    async def main() -> None:
        sunk: list[list[Emission]] = []

        ledger = Ledger()

        async def sink(emissions: list[Emission]) -> None:
            sunk.append(emissions)
            ledger.sunk_after.append(ledger.commits)

        host = Host(workspace or local_workspace(), ledger, VirtualClock(), sink, batch=batch)
        await host.start()
        ledger.commits = ledger.attempts = 0  # what the start committed (it takes the snapshot)
        ledger.committing.clear()
        try:
            async with asyncio.timeout(5):
                await scenario(host, ledger, sunk)
        finally:
            await host.close()

    asyncio.run(main())


async def held_burst(host: Host, ledger: Ledger, count: int) -> list[asyncio.Task[int]]:
    """`count` messages, the first of which is committing (held) while the rest arrive; each
    task returns how many commits had ended when its receive returned."""

    async def receive(n: int) -> int:
        outcome = await host.receive("slack", message(n), "lead")
        assert outcome is not None and outcome.status == "new"
        return ledger.commits

    ledger.release = asyncio.Event()
    release = ledger.release
    first = asyncio.create_task(receive(0))
    await ledger.committing.wait()
    rest = [asyncio.create_task(receive(n)) for n in range(1, count)]
    await asyncio.sleep(0)  # each of them normalises and queues
    assert not any(task.done() for task in (first, *rest))
    release.set()
    return [first, *rest]


def test_events_that_arrive_while_a_commit_runs_share_the_next_transaction() -> None:
    async def scenario(host: Host, ledger: Ledger, sunk: list[list[Emission]]) -> None:
        tasks = await held_burst(host, ledger, 5)
        returned_after = await asyncio.gather(*tasks)

        assert ledger.commits == 2
        # emissions go out, and receives return, only once their own event's commit has ended
        assert ledger.sunk_after == [1, 2, 2, 2, 2]
        assert returned_after == [1, 2, 2, 2, 2]
        assert await ledger.texts() == [f"<@{LEAD}> note {n}" for n in range(5)]
        assert len(sunk) == 5  # every event's emissions, in the order received
        firsts = [batch[0] for batch in sunk]
        assert all(isinstance(first, Delivery) for first in firsts)
        sunk_ids = [first.decision.event_id for first in firsts if isinstance(first, Delivery)]
        assert sunk_ids == [entry.id async for entry in ledger.ledger()]

    with_host(scenario)


def test_a_lone_event_is_committed_at_once_in_its_own_transaction() -> None:
    async def scenario(host: Host, ledger: Ledger, sunk: list[list[Emission]]) -> None:
        for n in range(3):
            await host.receive("slack", message(n), "lead")
            assert ledger.commits == n + 1

    with_host(scenario)


def test_a_batch_takes_at_most_its_limit_of_events() -> None:
    async def scenario(host: Host, ledger: Ledger, sunk: list[list[Emission]]) -> None:
        returned_after = await asyncio.gather(*await held_burst(host, ledger, 6))
        # the held one, then 2 + 2 + 1 of the five that queued behind it
        assert ledger.commits == 4
        assert ledger.sunk_after == [1, 2, 2, 3, 3, 4]
        assert min(returned_after) >= 1
        assert len(await ledger.texts()) == 6

    with_host(scenario, batch=2)


def test_a_refused_commit_fails_every_waiter_of_its_batch_and_the_next_batch_lands() -> None:
    async def scenario(host: Host, ledger: Ledger, sunk: list[list[Emission]]) -> None:
        ledger.refuse_at = 2  # the batch of 1 and 2, queued behind the held first event
        ledger.release = asyncio.Event()
        release = ledger.release
        first = asyncio.create_task(host.receive("slack", message(0), "lead"))
        await ledger.committing.wait()
        batch = [asyncio.create_task(host.receive("slack", message(n), "lead")) for n in (1, 2)]
        await asyncio.sleep(0)
        release.set()
        await first
        results = await asyncio.gather(*batch, return_exceptions=True)
        assert [type(r) for r in results] == [StoreError, StoreError]
        assert sunk and len(sunk) == 1  # only the first event's emissions went out

        again = await asyncio.gather(*(host.receive("slack", message(n), "lead") for n in (1, 2)))
        assert [o and o.status for o in again] == ["new", "new"]
        assert await ledger.texts() == [f"<@{LEAD}> note {n}" for n in range(3)]

    with_host(scenario)


def test_an_event_the_engine_fails_on_is_quarantined_alone_and_its_batch_lands(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario(host: Host, ledger: Ledger, sunk: list[list[Emission]]) -> None:
        ingest = host.engine.ingest

        async def failing(event: ChatEvent, via: str | None = None) -> Outcome:
            if event.text.endswith("note 2"):
                raise RuntimeError("a bug deciding this one event")
            return await ingest(event, via)

        host.engine.ingest = failing  # type: ignore[method-assign]
        ledger.release = asyncio.Event()
        release = ledger.release
        first = asyncio.create_task(host.receive("slack", message(0), "lead"))
        await ledger.committing.wait()
        batch = [asyncio.create_task(host.receive("slack", message(n), "lead")) for n in (1, 2, 3)]
        await asyncio.sleep(0)
        release.set()
        await first
        results = await asyncio.gather(*batch)
        assert [r and r.status for r in results] == ["new", None, "new"]
        assert await ledger.texts() == [f"<@{LEAD}> note {n}" for n in (0, 1, 3)]
        assert len(sunk) == 3  # the emissions of the three that landed, once each
        # Kept for a person to look at, and said once as the bug it is, with its traceback.
        rows = ledger.db.execute("SELECT source, reason, payload FROM quarantine").fetchall()
        failure = "unexpected RuntimeError: a bug deciding this one event"
        assert [(source, reason) for source, reason, _ in rows] == [
            ("slack", f"the engine failed on it: {failure}")
        ]
        assert "note 2" in rows[0][2]
        errors = [r for r in caplog.records if r.levelname == "ERROR"]
        assert len(errors) == 1 and errors[0].exc_info is not None
        # The next event the engine can take is taken as before.
        again = await host.receive("slack", message(4), "lead")
        assert again is not None and again.status == "new"

    with_host(scenario)


def test_an_unreadable_payload_in_a_burst_is_quarantined_alone() -> None:
    async def scenario(host: Host, ledger: Ledger, sunk: list[list[Emission]]) -> None:
        payloads: list[dict[str, Any]] = [message(0), {"type": "event_callback"}, message(2)]
        results = await asyncio.gather(*(host.receive("slack", p, "lead") for p in payloads))
        assert [r and r.status for r in results] == ["new", None, "new"]
        rows = ledger.db.execute("SELECT source FROM quarantine").fetchall()
        assert rows == [("slack",)]
        assert len(await ledger.texts()) == 2

    with_host(scenario)


def test_a_message_taken_again_after_a_refused_commit_is_decided_as_the_first_time() -> None:
    """The engine's memory changed with the rolled-back transaction (a turn counted in the
    person's budget): it is folded again from the ledger before the next event is decided,
    so the retried message is not counted twice and the next one is not held over a budget
    the person has not reached."""

    async def scenario(host: Host, ledger: Ledger, sunk: list[list[Emission]]) -> None:
        async def reason(n: int) -> str:
            outcome = await host.receive("slack", message(n), "lead")
            assert outcome is not None and outcome.status == "new"
            (decided,) = [e.decision for e in outcome.emissions if isinstance(e, Delivery)]
            return decided.reason

        ledger.refuse_at = 1
        with pytest.raises(StoreError):
            await host.receive("slack", message(0), "lead")
        assert [await reason(n) for n in (0, 1, 2)] == [
            "direct_message",
            "direct_message",
            "over_budget",  # the third turn of a budget of two
        ]

    with_host(scenario, workspace=local_workspace(budget={"turns": 2, "window_s": 3600}))


@pytest.mark.parametrize("limit", [0, -1])
def test_a_batch_limit_below_one_is_refused(limit: int) -> None:
    from c2a.group_commit import GroupCommit

    async def ingest(*_: Any) -> Any:
        raise AssertionError

    async def sink(_: list[Emission]) -> None:
        raise AssertionError

    with pytest.raises(ValueError, match="at least one event"):
        GroupCommit(SQLiteStore(":memory:").transaction, asyncio.Lock(), ingest, sink, limit=limit)


def test_a_leader_cancelled_mid_commit_fails_the_rest_of_its_batch_and_the_next_lands() -> None:
    async def scenario(host: Host, ledger: Ledger, sunk: list[list[Emission]]) -> None:
        ingest = host.engine.ingest
        ingesting = asyncio.Event()

        async def held(event: Any, via: str | None) -> Any:
            ingesting.set()
            await asyncio.Event().wait()  # until cancelled
            return await ingest(event, via)

        host.engine.ingest = held  # type: ignore[method-assign]
        leader = asyncio.create_task(host.receive("slack", message(0), "lead"))
        follower = asyncio.create_task(host.receive("slack", message(1), "lead"))
        await ingesting.wait()  # both in one batch, inside its transaction
        host.engine.ingest = ingest  # type: ignore[method-assign]
        leader.cancel()
        results = await asyncio.gather(leader, follower, return_exceptions=True)
        assert isinstance(results[0], asyncio.CancelledError)
        assert isinstance(results[1], StoreError)  # not left waiting forever

        after = await host.receive("slack", message(2), "lead")
        assert after is not None and after.status == "new"
        assert await ledger.texts() == [f"<@{LEAD}> note 2"]

    with_host(scenario)
