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
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from builders import HUMAN, LEAD, TEAM
from fakes.slack import FakeSlack
from test_run_sigterm import (
    APP_TOKEN,
    BOT_TOKEN,
    ENV,
    burst,
    ended,
    read_records,
    reply,
    start,
    until,
    write_manifest,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "store"))
from postgres_cluster import Cluster

EVENTS = 600
KILL_AT = 250  # events pushed before the lead's process is killed
HOLDS = "holds the lease of lead"
REPLY_EVERY = 20  # Slack takes a post a second per channel: 30 answers take 30 s
ANSWERS_ALLOWED = {"sends_per_minute": EVENTS}  # the answers come faster than a person's would


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    cluster = Cluster()
    try:
        cluster.start()
        yield cluster.database()
    finally:
        cluster.stop()


def pending(url: str) -> int:
    with psycopg.connect(url) as db:
        row = db.execute("SELECT count(*) FROM burst.deliveries WHERE status = 'pending'")
        return int(row.fetchone()[0])  # type: ignore[index]


def ledger_ids(url: str) -> list[str]:
    with psycopg.connect(url) as db:
        return [str(r[0]) for r in db.execute("SELECT id FROM burst.events")]


def at_least_once_across_a_kill(records: list[dict[str, Any]]) -> None:
    """What the killed process sent and never saw acknowledged is sent again by the survivor,
    with a higher attempt (the harness knows it by its event id); nothing else is ever sent
    twice, and no more come again than the eight a delivery window holds in flight."""
    first: dict[str, dict[str, Any]] = {}
    for r in records:
        earlier = first.setdefault(r["eventId"], r)
        if earlier is not r:
            assert earlier["pid"] != r["pid"], ("delivered twice by one process", earlier, r)
            assert int(r["attempt"]) > int(earlier["attempt"]), (earlier, r)
    assert len(records) - len(first) <= 8, "more redelivered than a kill can leave in flight"


def test_two_processes_deliver_each_event_once_and_survive_a_kill(
    tmp_path: Path, database: str
) -> None:
    record = tmp_path / "delivered.jsonl"
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    env = {**ENV, "C2A_DATABASE_URL": database}

    events = burst(EVENTS)
    answered = {reply(event_id) for event_id, _ in events[::REPLY_EVERY]}

    def posted(slack: FakeSlack) -> list[str]:
        return [m.get("text", "") for m in slack.messages.get("C0GEN", [])]

    async def scenario() -> tuple[set[str], str, list[str]]:
        async with FakeSlack(wait_timeout=120) as slack:
            slack.add_bot(BOT_TOKEN, LEAD, "B0LEAD", team_id=TEAM)
            slack.members["C0GEN"] = [LEAD, HUMAN]
            manifest = write_manifest(
                tmp_path, slack.api_url, record, str(REPLY_EVERY), attention=ANSWERS_ALLOWED
            )
            processes = []
            try:
                for n, log in enumerate(logs):
                    processes.append(await start(manifest, tmp_path / f"data{n}", log, env))
                    await slack.wait_connected(n + 1)
                await until(lambda: any(HOLDS in log.read_text() for log in logs), "a lease")
                holder = next(n for n, log in enumerate(logs) if HOLDS in log.read_text())
                other = 1 - holder
                sent: dict[str, str] = {}  # envelope id -> event id
                for n, (event_id, body) in enumerate(events):
                    if n == KILL_AT:
                        processes[holder].send_signal(signal.SIGKILL)
                        await processes[holder].wait()
                    for envelope in await slack.push_event_to_each(body, app_token=APP_TOKEN):
                        sent[envelope] = event_id
                    await asyncio.sleep(0.002)

                def acknowledged() -> set[str]:
                    return {sent[a["envelope_id"]] for a in slack.acks if a["envelope_id"] in sent}

                await until(lambda: len(acknowledged()) == EVENTS, "every event acknowledged")
                await until(
                    lambda: (
                        HOLDS in logs[other].read_text()
                        and acknowledged() <= {r["eventId"] for r in read_records(record)}
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
            return acknowledged(), logs[other].read_text(), posted(slack)

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
    doubled = [text for text, n in Counter(answers).items() if n > 1]
    assert sorted(answered) == sorted(answers) and not doubled, doubled  # each posted once
