"""What is said on Discord while `c2a run` is down reaches the agent once, whatever stopped it.

`c2a run` runs as a real process against the fake Discord (tests/fakes/discord.py) in this
one, with the recording stdio harness of test_run_sigterm.py, on one data directory. A burst of
mentions of the lead's bot is sent; the process is killed (SIGKILL) in the middle of it and
the rest of the burst is said while it is down; the next start RESUMEs the kept gateway
session and Discord replays the gap. Then the same with the session refused (INVALID_SESSION):
the gap is read from history. Then a graceful stop (SIGTERM), a gap, and a start that resumes.
Every message of every burst reaches the harness exactly once, but for what the delivery
protocol allows after a kill: the deliveries in flight are sent again, in order, as higher attempts.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from builders import D_HUMAN, D_LEAD, GUILD
from fakes.discord import FakeDiscord
from redeliveries import assert_only_allowed_repeats
from test_run_sigterm import ended, exited, read_records, start, until

CHANNEL = "820000000000000001"
TOKEN = "lead-token-not-a-secret"
ENV = {"DISCORD_LEAD_TOKEN": TOKEN}
TESTS = Path(__file__).resolve().parents[1]
HARNESS = Path(__file__).resolve().parent / "test_run_sigterm.py"
BURST = 40
KILL_AT = 10  # deliveries recorded before the process is stopped
IDENTIFY, RESUME = 2, 6


class Restarts:
    """`c2a run` started again and again on one data directory, and what was said meanwhile."""

    def __init__(self, directory: Path, fake: FakeDiscord) -> None:
        self.directory = directory
        self.fake = fake
        self.record = directory / "delivered.jsonl"
        self.manifest = write_manifest(directory, fake, self.record)
        self.said: list[str] = []
        self.statuses: list[int] = []
        self.logs: list[Path] = []

    async def start(self) -> asyncio.subprocess.Process:
        self.logs.append(self.directory / f"run-{len(self.logs)}.log")
        process = await start(self.manifest, self.directory / "data", self.logs[-1], ENV)
        await until(lambda: "discord agent lead: " in self.logs[-1].read_text(), "the bot")
        return process

    def delivered(self) -> list[dict[str, Any]]:
        return read_records(self.record)

    async def burst_and_stop(self, how: signal.Signals) -> None:
        """Start, send a burst, stop the process with `how` once `KILL_AT` more deliveries are
        recorded, and say the rest of the burst while it is down."""
        process = await self.start()
        try:
            target = len(self.delivered()) + KILL_AT
            stopped = False
            for _ in range(BURST):
                if not stopped and len(self.delivered()) >= target:
                    process.send_signal(how)
                    stopped = True
                self.said.append(await mention(self.fake, f"burst {len(self.said)}"))
                await asyncio.sleep(0.02)
            if not stopped:
                await until(lambda: len(self.delivered()) >= target, "the deliveries")
                process.send_signal(how)
            self.statuses.append(await exited(process))
        finally:
            await ended(process)

    async def last_run(self) -> None:
        """Start once more, wait until everything said reached the harness, stop gracefully."""
        process = await self.start()
        try:
            everything = set(self.said)
            await until(
                lambda: everything <= {r["eventId"] for r in self.delivered()},
                "every message at the harness",
            )
            # The bot hands its frames over in order and the host delivers in ledger order:
            # once a last message said after everything has reached the harness, whatever
            # would have come twice has come.
            last = await mention(self.fake, "the last word")
            await until(
                lambda: last in {r["eventId"] for r in self.delivered()}, "the last message"
            )
            process.send_signal(signal.SIGTERM)
            self.statuses.append(await exited(process))
        finally:
            await ended(process)


def test_a_killed_or_stopped_host_resumes_and_every_message_arrives_once(
    tmp_path: Path,
) -> None:
    async def scenario() -> tuple[Restarts, list[int]]:
        async with FakeDiscord(guild_id=GUILD) as fake:
            # Ids and timestamps from now: `c2a run` decides on the system clock.
            fake._clock_ms = int(time.time() * 1000)
            fake.add_bot(TOKEN, D_LEAD, "lead", "910000000000000001")
            fake.add_member(D_HUMAN, "ada.l")
            fake.add_channel(CHANNEL, "general")
            restarts = Restarts(tmp_path, fake)
            await restarts.burst_and_stop(signal.SIGKILL)
            await restarts.burst_and_stop(signal.SIGKILL)
            await fake.invalidate_sessions()  # the next start's RESUME is refused
            await restarts.burst_and_stop(signal.SIGTERM)
            await restarts.last_run()
            ops = [f["op"] for f in fake.gateway_received if f["op"] in (IDENTIFY, RESUME)]
            return restarts, ops

    restarts, ops = asyncio.run(scenario())

    assert restarts.statuses == [-signal.SIGKILL, -signal.SIGKILL, 0, 0]
    # The first start IDENTIFYs and the second RESUMEs; the third's RESUME is refused, so it
    # IDENTIFYs and reads the gap from history; the fourth RESUMEs after a graceful stop.
    assert ops == [IDENTIFY, RESUME, RESUME, IDENTIFY, RESUME], ops
    assert len(restarts.said) == 3 * BURST
    said = set(restarts.said)  # the agent's own 👀 and 🕐 reactions are delivered too
    records = [r for r in restarts.delivered() if r["eventId"] in said]
    delivered = [r["eventId"] for r in records]
    assert set(delivered) == said
    # Nothing reached the harness twice, but for what the protocol allows: after each kill,
    # the deliveries in flight come again first, in order, as new attempts of the same events.
    assert_only_allowed_repeats(records)
    lines = [json.loads(line) for log in restarts.logs for line in log.read_text().splitlines()]
    messages = [line["message"] for line in lines]
    assert any("caught up" in message for message in messages)
    assert sum("resumed its gateway session" in message for message in messages) == 2
    assert not [line for line in lines if line["level"] in ("error", "critical")]


async def mention(fake: FakeDiscord, text: str) -> str:
    message = await fake.user_says(CHANNEL, D_HUMAN, f"<@{D_LEAD}> {text}")
    return f"discord:{message['id']}"


def write_manifest(directory: Path, fake: FakeDiscord, record: Path) -> Path:
    harness = {
        "backend": "stdio",
        "command": [sys.executable, str(HARNESS), str(record)],
        "env": {
            "PYTHONPATH": os.pathsep.join(str(p) for p in (TESTS.parent, TESTS, TESTS / "cli"))
        },
        "restart_after_s": 0.5,
    }
    manifest = {
        "version": 1,
        "workspace": "restart",
        "discord": {
            "guild_id": GUILD,
            "api_url": f"{fake.url}/api/v10",
            "gateway_url": f"{fake.ws_url}/",
        },
        "agents": {
            "lead": {
                "lead": True,
                "discord": {"user_id": D_LEAD, "token_env": "DISCORD_LEAD_TOKEN"},
                "harness": harness,
            }
        },
    }
    path = directory / "restart.yaml"
    path.write_text(yaml.safe_dump(manifest))
    return path
