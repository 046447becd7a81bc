"""Two `c2a run` processes on one PostgreSQL ledger split a Discord bot's shards, and a kill
moves them.

Both run one manifest against the fake Discord: the lead's bot in two shards (guild messages on
shard 1, DMs on shard 0), its harness the recording one of `test_run_sigterm` (this module, run
as a script, answers in the channel). The first process takes every lease that is free when it
starts, both shards' and the harness's; once the second offers to share the shards, the first
gives shard 1 up and the second RESUMEs its session. Mid-stream the first is killed (SIGKILL):
Discord keeps shard 0's session, and once the leases expire the second takes them, RESUMEs the
session from the sequence the ledger kept, the gateway replays the DMs sent meanwhile, and the
harness resumes from the last acknowledged delivery. Afterwards every message said is in the
ledger once and reached the harness once (but for the deliveries in flight at the kill, sent
again with a higher attempt), and each answer was posted once. The takeover time is printed
(`pytest -s`) for docs/deploy.md.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_run_sigterm
import yaml
from builders import D_HUMAN, D_LEAD, GUILD
from fakes.discord import FakeDiscord
from hosts_on_postgres import ledger_ids, pending, throwaway
from test_run_discord_restart import CHANNEL, ENV, IDENTIFY, RESUME, TOKEN
from test_run_discord_restart import write_manifest as restart_manifest
from test_run_sigterm import ended, exited, read_records, reply, start, until
from test_run_two_hosts import at_least_once_across_a_kill

from c2a.run_leases import LEASE_TTL_MS

DM = "830000000000000001"  # the person's DM channel with the lead's bot
MESSAGES = 400
KILL_AT = 150  # messages said before the holder is killed
REPLY_EVERY = 20
SHARDS = ("discord:lead:shard:0", "discord:lead:shard:1")
HOLDS = "holds the lease "
TAKEOVER = LEASE_TTL_MS / 1000  # the survivor takes it as it expires


def holds(log: Path, lease: str) -> bool:
    return f"{HOLDS}{lease} " in log.read_text()


def resumed(log: Path) -> bool:
    return "resumed its gateway session" in log.read_text()


def manifest(directory: Path, fake: FakeDiscord, record: Path) -> Path:
    """`test_run_discord_restart`'s manifest with the lead's bot in two shards and this
    module's harness, answering every `REPLY_EVERY`-th message."""
    path = restart_manifest(directory, fake, record)
    data = yaml.safe_load(path.read_text())
    data["workspace"] = "burst"  # the schema `test_run_two_hosts` reads
    data["discord"]["shard_count"] = 2
    command = [sys.executable, str(Path(__file__).resolve()), str(record), str(REPLY_EVERY)]
    data["agents"]["lead"]["harness"]["command"] = command
    data["attention"] = {"sends_per_minute": MESSAGES}  # answers come faster than a person's
    path.write_text(yaml.safe_dump(data))
    return path


def furnish(fake: FakeDiscord) -> None:
    """The lead's bot, a person, the guild channel and the person's DM channel with the bot."""
    fake._clock_ms = int(time.time() * 1000)  # `c2a run` decides on the system clock
    fake.add_bot(TOKEN, D_LEAD, "lead", "910000000000000001")
    fake.add_member(D_HUMAN, "ada.l")
    fake.add_channel(CHANNEL, "general")
    person = fake.users[D_HUMAN]
    fake.dm_channels[DM] = {
        "id": DM,
        "type": 1,
        "name": "",
        "last_message_id": None,
        "recipients": [person],
    }


async def say(fake: FakeDiscord, n: int) -> str:
    """Message `n`: a mention in the guild channel (shard 1), every third one a DM (shard 0)."""
    if n % 3 == 2:
        message = await fake.user_says(DM, D_HUMAN, f"burst {n}")
    else:
        message = await fake.user_says(CHANNEL, D_HUMAN, f"<@{D_LEAD}> burst {n}")
    return f"discord:{message['id']}"


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    """A throwaway PostgreSQL database for this module."""
    for cluster in throwaway():
        yield cluster.database()


def test_two_processes_split_the_shards_and_a_kill_moves_them_with_the_session_resumed(
    tmp_path: Path, database: str
) -> None:
    record = tmp_path / "delivered.jsonl"
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    env = {**ENV, "C2A_DATABASE_URL": database}

    async def scenario() -> tuple[list[str], float, list[int], list[int], list[str]]:
        async with FakeDiscord(guild_id=GUILD) as fake:
            furnish(fake)
            path = manifest(tmp_path, fake, record)
            processes = []
            try:
                processes.append(await start(path, tmp_path / "a", logs[0], env))
                await until(lambda: all(holds(logs[0], s) for s in SHARDS), "a's shards")
                await until(lambda: "running 1 agent(s)" in logs[0].read_text(), "both shards")
                processes.append(await start(path, tmp_path / "b", logs[1], env))
                # Two processes offer the shards: `a` gives its second up, `b` RESUMEs it.
                await until(lambda: holds(logs[1], SHARDS[1]) and resumed(logs[1]), "a split")
                said: list[str] = []
                for n in range(MESSAGES):
                    if n == KILL_AT:
                        processes[0].send_signal(signal.SIGKILL)
                        await processes[0].wait()
                        killed = time.monotonic()
                    said.append(await say(fake, n))
                    await asyncio.sleep(0.005)
                await until(lambda: holds(logs[1], SHARDS[0]), "the takeover")
                takeover = time.monotonic() - killed
                await until(
                    lambda: (
                        set(said) <= {r["eventId"] for r in read_records(record)}
                        and pending(database) == 0
                    ),
                    "every message at the harness",
                )
                answered = {reply(e) for n, e in enumerate(said) if n % REPLY_EVERY == 0}
                await until(lambda: answered <= set(posted(fake)), "every answer posted")
                processes[1].send_signal(signal.SIGTERM)
                statuses = [await exited(p) for p in processes]
            finally:
                for process in processes:
                    await ended(process)
            ops = [f["op"] for f in fake.gateway_received if f["op"] in (IDENTIFY, RESUME)]
            return said, takeover, statuses, ops, posted(fake)

    said, takeover, statuses, ops, answers = asyncio.run(scenario())
    print(f"shard takeover {takeover:.1f} s after the kill (lease time {LEASE_TTL_MS} ms)")
    assert statuses == [-signal.SIGKILL, 0]
    assert takeover <= TAKEOVER + 5  # + the time a loaded machine takes to notice
    # The first process IDENTIFYed both shards; the second RESUMEd shard 1's session when the
    # first gave it up, and shard 0's when the first was killed.
    assert ops == [IDENTIFY, IDENTIFY, RESUME, RESUME], ops
    assert_logs(*(log.read_text() for log in logs))
    ids = [i for i in ledger_ids(database) if i in set(said)]
    assert sorted(ids) == sorted(said)  # each message in the ledger once
    records = [r for r in read_records(record) if r["eventId"] in set(said)]
    assert {r["eventId"] for r in records} == set(said)
    assert len({r["pid"] for r in records}) == 2, "the harness moved to the other process"
    # Repeats only across the kill, with higher attempts (the killed process's harness may
    # still write a record or two after the kill, so the order is not checked).
    at_least_once_across_a_kill(records)
    answered = [reply(e) for n, e in enumerate(said) if n % REPLY_EVERY == 0]
    doubled = [text for text, n in Counter(answers).items() if n > 1]
    assert sorted(answered) == sorted(answers) and not doubled, doubled  # each posted once


def assert_logs(first: str, survivor: str) -> None:
    """The first process gave shard 1 up, the survivor RESUMEd both shards, and neither logged
    an error (nor warned of missing DMs: every shard is held somewhere)."""
    assert f"gave up the lease {SHARDS[1]}" in first
    assert survivor.count("resumed its gateway session") == 2, survivor
    lines = [json.loads(line) for line in (first + survivor).splitlines()]
    assert not [line for line in lines if line["level"] in ("error", "critical")]
    assert not [line for line in lines if "no DMs" in line["message"]]


def posted(fake: FakeDiscord) -> list[str]:
    """The answers the lead's bot posted."""
    return [
        str(m.get("content", ""))
        for m in fake.messages.values()
        if m["author"]["id"] == D_LEAD and str(m.get("content", "")).startswith("answer to ")
    ]


if __name__ == "__main__":
    asyncio.run(test_run_sigterm.record_deliveries(Path(sys.argv[1]), int(sys.argv[2])))
