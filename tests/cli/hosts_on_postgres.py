"""What the tests of several `c2a run` processes on one PostgreSQL ledger share: a throwaway
server of the test module's own, the burst workspace's processes started against the fake
Slack, the events pushed over every connection and the acknowledgements read back (retries
included), and the reads of the ledger and of what Slack was sent."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
from builders import HUMAN, LEAD, TEAM
from fakes.slack import FakeSlack
from test_run_sigterm import (
    APP_TOKEN,
    BOT_TOKEN,
    ENV,
    read_records,
    start,
    until,
    write_manifest,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core" / "store"))
from postgres_cluster import Cluster, throwaway

__all__ = [
    "ANSWERS_ALLOWED",
    "HOLDS",
    "Cluster",
    "Stream",
    "assert_each_posted_once",
    "ledger_ids",
    "log_of",
    "pending",
    "posted",
    "start_host",
    "start_hosts",
    "stop",
    "throwaway",
]

HOLDS = "holds the lease of lead"
ANSWERS_ALLOWED = {"sends_per_minute": 10_000}  # the answers come faster than a person's would


async def start_hosts(
    slack: FakeSlack, folder: Path, record: Path, database: str, reply_every: int, n: int = 2
) -> list[Any]:
    """`n` processes of the burst workspace on the ledger at `database`, each with its data
    folder `data<i>` and log `<i>.log` in `folder`, its harness appending to `record` and
    answering every `reply_every`-th mention; returned once each is connected to Slack and
    one holds the lead's lease."""
    slack.add_bot(BOT_TOKEN, LEAD, "B0LEAD", team_id=TEAM)
    slack.members["C0GEN"] = [LEAD, HUMAN]
    manifest = write_manifest(
        folder, slack.api_url, record, str(reply_every), attention=ANSWERS_ALLOWED
    )
    processes = []
    for i in range(n):
        processes.append(await start_host(manifest, folder, i, database))
        await slack.wait_connected(len(processes))
    logs = [log_of(folder, i) for i in range(n)]
    await until(lambda: any(HOLDS in log.read_text() for log in logs), "a lease")
    return processes


async def start_host(
    manifest: Path, folder: Path, i: int, database: str, log: Path | None = None
) -> Any:
    """Process `i` of the workspace, logging to `log` (by default `<i>.log`); again, after it
    was killed, on the same data folder."""
    env = {**ENV, "C2A_DATABASE_URL": database}
    return await start(manifest, folder / f"data{i}", log or log_of(folder, i), env)


def log_of(folder: Path, i: int) -> Path:
    return folder / f"{i}.log"


class Stream:
    """The events pushed to Slack, by envelope, and which of them Slack saw acknowledged."""

    def __init__(self, slack: FakeSlack) -> None:
        self.slack = slack
        self.sent: dict[str, str] = {}  # envelope id (a first push's) -> event id

    async def push(self, event_id: str, body: dict[str, Any]) -> None:
        """Push the event over every open connection of the app."""
        for envelope in await self.slack.push_event_to_each(body, app_token=APP_TOKEN):
            self.sent[envelope] = event_id

    def acknowledged(self) -> set[str]:
        """The events of which an envelope, or one of its retries, was acknowledged."""
        retries = self.slack.retries
        firsts = (retries.get(a["envelope_id"], a["envelope_id"]) for a in self.slack.acks)
        return {self.sent[e] for e in firsts if e in self.sent}

    async def settle(self, events: int, record: Path, database: str, answered: set[str]) -> None:
        """Wait until all `events` are acknowledged, each reached the harness (`record`), the
        ledger at `database` owes no delivery and every answer in `answered` is posted."""
        await until(lambda: len(self.acknowledged()) == events, "every ack")
        await until(
            lambda: (
                self.acknowledged() <= {r["eventId"] for r in read_records(record)}
                and pending(database) == 0
                and answered <= set(posted(self.slack))
            ),
            "every event to reach the harness and every answer to be posted",
        )

    def retried(self) -> int:
        """How many acknowledgements were of an event Slack sent again."""
        return sum(a["envelope_id"] in self.slack.retries for a in self.slack.acks)


async def stop(processes: list[Any]) -> None:
    """SIGTERM each process and wait for it to end."""
    for process in processes:
        process.terminate()
        await process.wait()


def posted(slack: FakeSlack) -> list[str]:
    """The texts posted in the channel, in order."""
    return [m.get("text", "") for m in slack.messages.get("C0GEN", [])]


def assert_each_posted_once(answered: set[str], answers: list[str]) -> None:
    doubled = [text for text, n in Counter(answers).items() if n > 1]
    assert sorted(answered) == sorted(answers) and not doubled, doubled


def pending(url: str) -> int:
    with psycopg.connect(url) as db:
        row = db.execute("SELECT count(*) FROM burst.deliveries WHERE status = 'pending'")
        return int(row.fetchone()[0])  # type: ignore[index]


def ledger_ids(url: str) -> list[str]:
    """The ids of the chat events in the ledger (not the host's own `x.c2a.*` records)."""
    with psycopg.connect(url) as db:
        rows = db.execute("SELECT id FROM burst.events WHERE kind NOT LIKE 'x.c2a.%'")
        return [str(r[0]) for r in rows]
