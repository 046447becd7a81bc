"""Two `c2a run` processes on one PostgreSQL ledger, the server restarted mid-stream.

The two processes of `test_run_two_hosts` run the burst workspace against the fake Slack, every
event pushed over both Socket Mode connections. Partway, the PostgreSQL server is stopped
(a fast shutdown: what is open is rolled back and every connection ends), left down a few
seconds while events go on arriving, and started again on the same socket. Meanwhile nothing
may be acknowledged to Slack that is not committed: an event neither process could take in is
left unacknowledged, and the fake Slack sends it again later, as Slack does (faster here). Each
process says once that the ledger is unreachable and once that it answers again, with no
traceback, and goes on by itself: after the stream every event is in the ledger once, every
one reached the harness (a delivery whose acknowledgement the outage cut off is sent again,
with a higher attempt), and every answer was posted once. The same holds for one process on
Discord, which sends each dispatch once and waits for no acknowledgement.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hosts_on_postgres as hosts
import pytest
import test_run_two_hosts_discord as discord_hosts
import yaml
from fakes.discord import FakeDiscord
from fakes.slack import FakeSlack
from test_run_sigterm import burst, ended, exited, read_records, reply, start, until

from harness_bridge.delivery import DELIVERY_WINDOW

EVENTS = 300
DISCORD_MESSAGES = 150
STOP_AT = 100  # events pushed before the server is stopped
DOWN = 3.0  # seconds the server stays down
REDELIVERIES = (2.0, 4.0, 8.0, 16.0)  # Slack's 1, 5 and 30 minutes, shortened
REPLY_EVERY = 20
DOWN_LINE = "is unreachable"
UP_LINE = "answers again: resuming"


@pytest.fixture(scope="module")
def cluster() -> Iterator[hosts.Cluster]:
    yield from hosts.throwaway()  # this module's own: it is stopped and started again


def repeats_only_after_the_outage(records: list[dict[str, Any]], processes: int) -> None:
    """A delivery comes again only as a higher attempt of its event: one the harness took
    whose acknowledgement could not be recorded while the ledger was down, at most a window's
    worth per process."""
    first: dict[str, dict[str, Any]] = {}
    for r in records:
        earlier = first.setdefault(r["eventId"], r)
        if earlier is not r:
            assert int(r["attempt"]) > int(earlier["attempt"]), (earlier, r)
    assert len(records) - len(first) <= DELIVERY_WINDOW * processes, "too many repeats"


def said_once_each_way(log: str) -> None:
    """The process said once that the ledger was unreachable and once that it answered again,
    logged no error and no traceback (what failed meanwhile is logged quietly)."""
    assert "Traceback" not in log, log[-3000:]
    lines = [json.loads(line) for line in log.splitlines()]
    store = [line["message"] for line in lines if line["logger"] == "c2a.store"]
    assert [DOWN_LINE in m for m in store] == [True, False], store
    assert [UP_LINE in m for m in store] == [False, True], store
    errors = [line["message"] for line in lines if line["level"] in ("error", "critical")]
    assert not errors, errors


def test_the_hosts_pause_while_the_database_restarts_and_resume_losing_nothing(
    tmp_path: Path, cluster: hosts.Cluster
) -> None:
    database = cluster.database()
    record = tmp_path / "delivered.jsonl"
    events = burst(EVENTS)
    answered = {reply(event_id) for event_id, _ in events[::REPLY_EVERY]}

    async def restart() -> None:
        await asyncio.to_thread(cluster.stop_server, "fast")
        await asyncio.sleep(DOWN)
        await asyncio.to_thread(cluster.start_server)

    async def scenario() -> tuple[set[str], list[str], int]:
        async with FakeSlack(wait_timeout=120, redeliveries=REDELIVERIES) as slack:
            stream = hosts.Stream(slack)
            processes = await hosts.start_hosts(slack, tmp_path, record, database, REPLY_EVERY)
            try:
                restarting: asyncio.Task[None] | None = None
                for n, (event_id, body) in enumerate(events):
                    if n == STOP_AT:
                        restarting = asyncio.create_task(restart())
                    await stream.push(event_id, body)
                    await asyncio.sleep(0.02)
                assert restarting is not None
                await restarting
                await stream.settle(EVENTS, record, database, answered)
                await hosts.stop(processes)
            finally:
                for process in processes:
                    await ended(process)
            return stream.acknowledged(), hosts.posted(slack), stream.retried()

    acknowledged, answers, retried = asyncio.run(scenario())
    assert len(acknowledged) == EVENTS
    assert retried > 0, "no event arrived by Slack's redelivery: the outage took none"
    ids = hosts.ledger_ids(database)
    assert sorted(ids) == sorted(set(ids)) and set(ids) == acknowledged  # each event once
    for i in range(2):
        said_once_each_way(hosts.log_of(tmp_path, i).read_text())
    records = read_records(record)
    assert acknowledged == {r["eventId"] for r in records}
    repeats_only_after_the_outage(records, 2)
    hosts.assert_each_posted_once(answered, answers)


def test_discord_dispatches_sent_while_the_database_restarts_are_taken_in_once_it_answers(
    tmp_path: Path, cluster: hosts.Cluster
) -> None:
    """Discord sends a dispatch once and waits for no acknowledgement: what arrives while the
    ledger is down is handed over again until the ledger takes it. One process, the lead's bot
    on the fake Discord, `test_run_two_hosts_discord`'s harness answering every
    `REPLY_EVERY`-th message."""
    database = cluster.database()
    record = tmp_path / "delivered.jsonl"
    log = tmp_path / "run.log"
    env = {**discord_hosts.ENV, "C2A_DATABASE_URL": database}

    async def restart() -> None:
        await asyncio.to_thread(cluster.stop_server, "fast")
        await asyncio.sleep(DOWN)
        await asyncio.to_thread(cluster.start_server)

    async def scenario() -> tuple[list[str], list[str]]:
        async with FakeDiscord(guild_id=discord_hosts.GUILD) as fake:
            discord_hosts.furnish(fake)
            data = yaml.safe_load(discord_hosts.manifest(tmp_path, fake, record).read_text())
            data["discord"].pop("shard_count")  # one shard, one process
            path = tmp_path / "one.yaml"
            path.write_text(yaml.safe_dump(data))
            process = await start(path, tmp_path / "data", log, env)
            try:
                await until(lambda: "running 1 agent(s)" in log.read_text(), "the start")
                said: list[str] = []
                restarting: asyncio.Task[None] | None = None
                for n in range(DISCORD_MESSAGES):
                    if n == STOP_AT // 2:
                        restarting = asyncio.create_task(restart())
                    said.append(await discord_hosts.say(fake, n))
                    await asyncio.sleep(0.02)
                assert restarting is not None
                await restarting
                await until(
                    lambda: (
                        set(said) <= {r["eventId"] for r in read_records(record)}
                        and hosts.pending(database) == 0
                    ),
                    "every message at the harness",
                )
                answered = {reply(e) for n, e in enumerate(said) if n % REPLY_EVERY == 0}
                posted = discord_hosts.posted
                await until(lambda: answered <= set(posted(fake)), "every answer posted")
                process.send_signal(signal.SIGTERM)
                assert await exited(process) == 0
            finally:
                await ended(process)
            return said, discord_hosts.posted(fake)

    said, answers = asyncio.run(scenario())
    ids = [i for i in hosts.ledger_ids(database) if i in set(said)]
    assert sorted(ids) == sorted(said)  # each message in the ledger once
    said_once_each_way(log.read_text())
    records = [r for r in read_records(record) if r["eventId"] in set(said)]
    repeats_only_after_the_outage(records, 1)
    answered = {reply(e) for n, e in enumerate(said) if n % REPLY_EVERY == 0}
    hosts.assert_each_posted_once(answered, answers)
