"""Two `c2a run` processes on one PostgreSQL ledger, with a process killed mid-stream.

Both run the same manifest (the burst workspace of `test_run_sigterm`, its recording harness)
against the fake Slack, each with its own Socket Mode connection, and every event is pushed
over every open connection, so each process receives each one. The ledger's uniqueness makes
the second copy a no-op; the lead's harness runs in whichever process holds its lease. Halfway,
that process is killed (SIGKILL): once its lease expires the other takes the harness over and
resumes from the last acknowledged delivery. After the stream, every event either process
acknowledged to Slack reached the harness, none twice but for the deliveries the protocol
allows to be repeated (in flight at the kill, sent again by the survivor with a higher attempt).

The harness also answers every twentieth mention in the channel, under an idempotency key of
the event, and the fake Slack keeps what was posted: each answer is there exactly once,
whichever process drained it. An answer the killed process was sending comes back `ambiguous`
and is looked for on Slack before it is sent again, and an answer asked for again (a delivery
repeated after the kill) keeps its key, so neither is posted twice.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.slack import FakeSlack
from hosts_on_postgres import (
    HOLDS,
    Cluster,
    Stream,
    assert_each_posted_once,
    ledger_ids,
    log_of,
    pending,
    posted,
    start_hosts,
    throwaway,
)
from test_run_sigterm import burst, ended, read_records, reply, until

from harness_bridge.delivery import DELIVERY_WINDOW

EVENTS = 600
KILL_AT = 250  # events pushed before the lead's process is killed
REPLY_EVERY = 20  # Slack takes a post a second per channel: 30 answers take 30 s


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from throwaway()


def at_least_once_across_a_kill(records: list[dict[str, Any]]) -> None:
    """What the killed process sent and never saw acknowledged is sent again by the survivor,
    with a higher attempt (the harness knows it by its event id); nothing else is ever sent
    twice, and no more come again than a delivery window holds in flight."""
    first: dict[str, dict[str, Any]] = {}
    for r in records:
        earlier = first.setdefault(r["eventId"], r)
        if earlier is not r:
            assert earlier["pid"] != r["pid"], ("delivered twice by one process", earlier, r)
            assert int(r["attempt"]) > int(earlier["attempt"]), (earlier, r)
    assert len(records) - len(first) <= DELIVERY_WINDOW, (
        "more redelivered than a kill can leave in flight"
    )


def test_two_processes_deliver_each_event_once_and_survive_a_kill(
    tmp_path: Path, cluster: Cluster
) -> None:
    database = cluster.database()
    record = tmp_path / "delivered.jsonl"
    logs = [log_of(tmp_path, 0), log_of(tmp_path, 1)]
    events = burst(EVENTS)
    answered = {reply(event_id) for event_id, _ in events[::REPLY_EVERY]}

    async def scenario() -> tuple[set[str], str, list[str]]:
        async with FakeSlack(wait_timeout=120) as slack:
            stream = Stream(slack)
            processes = await start_hosts(slack, tmp_path, record, database, REPLY_EVERY)
            try:
                holder = next(n for n, log in enumerate(logs) if HOLDS in log.read_text())
                other = 1 - holder
                for n, (event_id, body) in enumerate(events):
                    if n == KILL_AT:
                        # Killed mid-stream once its harness has had deliveries (a slow start
                        # would leave it none, and nothing to take over).
                        await until(lambda: bool(read_records(record)), "a first delivery")
                        processes[holder].send_signal(signal.SIGKILL)
                        await processes[holder].wait()
                    await stream.push(event_id, body)
                    await asyncio.sleep(0.002)
                await until(lambda: len(stream.acknowledged()) == EVENTS, "every ack")
                await until(
                    lambda: (
                        HOLDS in logs[other].read_text()
                        and stream.acknowledged() <= {r["eventId"] for r in read_records(record)}
                        and pending(database) == 0
                    ),
                    "every acknowledged event to reach the harness",
                )
                await until(lambda: answered <= set(posted(slack)), "every answer posted")
                processes[other].send_signal(signal.SIGTERM)
                await processes[other].wait()
            finally:
                for process in processes:
                    await ended(process)
            return stream.acknowledged(), logs[other].read_text(), posted(slack)

    acknowledged, survivor, answers = asyncio.run(scenario())
    assert len(acknowledged) == EVENTS
    assert HOLDS in survivor
    ids = ledger_ids(database)
    assert sorted(ids) == sorted(set(ids)) and set(ids) == acknowledged  # each event once
    records = read_records(record)
    delivered = [r["eventId"] for r in records]
    assert acknowledged == set(delivered)
    assert len({r["pid"] for r in records}) == 2, "the harness moved to the other process"
    at_least_once_across_a_kill(records)
    assert {r["reply"] for r in records if "reply" in r} <= {"queued", "duplicate"}
    assert_each_posted_once(answered, answers)
