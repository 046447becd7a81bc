"""`kill -9` of either of two `c2a run` processes on one PostgreSQL ledger, again and again.

The two processes of `test_run_two_hosts` take a stream of a few thousand events from the fake
Slack (pushed over every open connection; one neither acknowledged comes again, as Slack sends
it again). At points a seeded random choice makes, it kills the process that holds the lead's
lease or the other one, as the choice says, with SIGKILL, and starts it again at once on its
own data folder. Afterwards every event Slack saw acknowledged reached the harness; a delivery
came again only as a higher attempt after the harness moved, at most a window's worth per kill;
every answer was posted once; and each time the holder was killed, another process took the
lease within the bound a lease's expiry and one renewal round set, measured from the logs.
The seed is in every failure's message; `C2A_KILL_SEED` replays one.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import hosts_on_postgres as hosts
import pytest
from fakes.slack import FakeSlack
from redeliveries import assert_only_allowed_repeats
from test_run_sigterm import burst, ended, read_records, reply

from c2a.run_leases import LEASE_TTL_MS
from harness_bridge.delivery import DELIVERY_WINDOW

EVENTS = 2000
KILLS = 3
REPLY_EVERY = 200  # Slack takes a post a second per channel
REDELIVERIES = (2.0, 4.0, 8.0, 16.0)  # Slack's 1, 5 and 30 minutes, shortened
PACE = 0.01  # seconds between two events
# The lease of a killed holder expires at most its time after the kill, and another process
# takes it as it expires (`HarnessLeases.until_next`); a loaded machine gets a little more.
TAKEOVER_BOUND = LEASE_TTL_MS / 1000 + 2.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[hosts.Cluster]:
    yield from hosts.throwaway()


def kill_plan(seed: int) -> list[tuple[int, bool]]:
    """Where each kill comes (after how many events) and whether it is the lease holder's:
    one kill in the first half of each of `KILLS` equal stretches of the stream."""
    rng = random.Random(seed)
    stretch = (EVENTS - 200) // KILLS
    return [
        (100 + k * stretch + rng.randrange(stretch // 2), rng.random() < 0.5) for k in range(KILLS)
    ]


def lease_taken(logs: list[Path], after: datetime, by: set[str]) -> datetime | None:
    """When a process other than the killed one (`by`: the logs of the others) first said it
    holds the lead's lease after `after`."""
    times = []
    for log in logs:
        if log.name not in by:
            continue
        for line in log.read_text().splitlines():
            record = json.loads(line)
            if hosts.HOLDS in record["message"]:
                moment = datetime.fromisoformat(record["time"])
                if moment > after:
                    times.append(moment)
    return min(times, default=None)


def test_either_process_killed_again_and_again_loses_and_doubles_nothing(
    tmp_path: Path, cluster: hosts.Cluster
) -> None:
    seed = int(os.environ.get("C2A_KILL_SEED") or random.randrange(1_000_000))
    try:
        check(tmp_path, cluster.database(), seed)
    except AssertionError as exc:
        raise AssertionError(f"seed {seed} (C2A_KILL_SEED={seed} replays it): {exc}") from exc


def check(folder: Path, database: str, seed: int) -> None:
    record = folder / "delivered.jsonl"
    events = burst(EVENTS)
    answered = {reply(event_id) for event_id, _ in events[::REPLY_EVERY]}
    plan = dict(kill_plan(seed))
    kills: list[tuple[datetime, Path, bool]] = []  # when, the killed one's log, was it holder
    logs = [hosts.log_of(folder, 0), hosts.log_of(folder, 1)]

    def holder() -> int:
        held = [n for n, log in enumerate(logs) if holds(log)]
        return held[0] if held else 0

    async def scenario() -> tuple[set[str], list[str]]:
        async with FakeSlack(wait_timeout=120, redeliveries=REDELIVERIES) as slack:
            stream = hosts.Stream(slack)
            processes = await hosts.start_hosts(slack, folder, record, database, REPLY_EVERY)
            connected = 2
            try:
                for n, (event_id, body) in enumerate(events):
                    if n in plan:
                        await slack.wait_connected(connected)
                        victim = holder() if plan[n] else 1 - holder()
                        processes[victim].send_signal(signal.SIGKILL)
                        kills.append((datetime.now(UTC), logs[victim], holds(logs[victim])))
                        await processes[victim].wait()
                        logs[victim] = folder / f"{victim}.{len(kills)}.log"
                        processes[victim] = await hosts.start_host(
                            folder / "burst.yaml", folder, victim, database, logs[victim]
                        )
                        connected += 1
                    await stream.push(event_id, body)
                    await asyncio.sleep(PACE)
                await stream.settle(EVENTS, record, database, answered)
                await hosts.stop(processes)
            finally:
                for process in processes:
                    await ended(process)
            return stream.acknowledged(), hosts.posted(slack)

    acknowledged, answers = asyncio.run(scenario())
    assert len(acknowledged) == EVENTS
    records = read_records(record)
    assert acknowledged == {r["eventId"] for r in records}  # nothing acknowledged was lost
    repeats = assert_only_allowed_repeats(records)
    assert repeats <= DELIVERY_WINDOW * KILLS, f"{repeats} repeats for {KILLS} kills"
    hosts.assert_each_posted_once(answered, answers)
    every_log = sorted(folder.glob("*.log"))
    takeovers = []
    for when, killed, was_holder in kills:
        if was_holder:
            taken = lease_taken(every_log, when, {log.name for log in every_log} - {killed.name})
            assert taken is not None, f"nobody took the lease after the kill at {when}"
            takeovers.append((taken - when).total_seconds())
    assert all(t <= TAKEOVER_BOUND for t in takeovers), (takeovers, TAKEOVER_BOUND)
    print(
        f"seed {seed}: kills {[(w.isoformat(), h) for w, _, h in kills]}, takeovers {takeovers} s"
    )


def holds(log: Path) -> bool:
    """Whether the process logging to `log` holds the lead's lease now (its last word on it)."""
    said = [
        json.loads(line)["message"]
        for line in log.read_text().splitlines()
        if "lease of lead" in line
    ]
    return bool(said) and hosts.HOLDS in said[-1]
