"""SIGHUP makes a running `c2a run` read its manifest again, as a real process: the real
slack-bolt against the fake Slack, the SQLite ledger on disk, and the recording stdio harness of
`test_run_sigterm` for an agent the reload adds.

One process takes, in turn: a reload that adds a Slack agent with a harness and removes another
(Slack is reconnected); a reload that gives an agent a name while events keep arriving (every
one is taken); a manifest that does not validate (refused in one line, the running one kept); and
SIGTERM, after which it exits 0.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from builders import HUMAN, LEAD, TEAM, W1, W2, slack_body, slack_message
from fakes.slack import FakeSlack
from test_run_sigterm import TESTS, ended, exited, read_records, start, until

AGENTS = {"lead": LEAD, "worker-1": W1, "worker-2": W2}
PREFIX = {"lead": "SLACK_LEAD", "worker-1": "SLACK_W1", "worker-2": "SLACK_W2"}
ENV = {
    **{f"{PREFIX[a]}_BOT_TOKEN": f"xoxb-{a}-reload" for a in AGENTS},
    **{f"{PREFIX[a]}_APP_TOKEN": f"xapp-1-{a}-reload" for a in AGENTS},
}
BURST = 20
NAME = "reviewer"
CALL = f"{NAME}, can you look at the diff?"
CHANNELS = {"C0GEN": {}, "C0OPS": {}}
RELOADED = ": reloaded "  # the line a reload that was taken logs


def app_token(agent: str) -> str:
    return ENV[f"{PREFIX[agent]}_APP_TOKEN"]


def agent(name: str, record: Path | None = None, names: list[str] | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "slack": {
            "user_id": AGENTS[name],
            "bot_token_env": f"{PREFIX[name]}_BOT_TOKEN",
            "app_token_env": f"{PREFIX[name]}_APP_TOKEN",
        }
    }
    if name == "lead":
        config["lead"] = True
    if names:
        config["names"] = names
    if record is not None:
        script = TESTS / "cli" / "test_run_sigterm.py"
        path = os.pathsep.join(str(p) for p in (TESTS.parent, TESTS, TESTS / "cli"))
        config["harness"] = {
            "backend": "stdio",
            "command": [sys.executable, str(script), str(record)],
            "env": {"PYTHONPATH": path},
        }
    return config


def write(path: Path, api_url: str, agents: dict[str, Any], **extra: Any) -> None:
    manifest = {
        "version": 1,
        "workspace": "hup",
        "slack": {"team_id": TEAM, "api_url": api_url},
        "agents": agents,
        "channels": {"C0GEN": {}},
        **extra,
    }
    path.write_text(yaml.safe_dump(manifest))


def log_lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


def messages(log: Path, part: str) -> list[str]:
    return [line["message"] for line in log_lines(log) if part in line["message"]]


def decisions(log: Path, event_id: str) -> dict[str, dict[str, Any]]:
    """Each agent's decision on `event_id`, from the decision log."""
    lines = log_lines(log)
    return {
        line["agent"]: line
        for line in lines
        if line["logger"] == "c2a.decisions"
        and line.get("event_id") == event_id
        and "directedness" in line  # not the seen reaction's line
    }


def stored(data: Path) -> set[str]:
    ledger = data / "hup.sqlite3"
    with sqlite3.connect(f"file:{ledger}?mode=ro", uri=True) as db:
        return {row[0] for row in db.execute("SELECT id FROM events")}


_stamps = iter(range(1, 1_000_000))


def mention(text: str, via: str, channel: str = "C0GEN") -> tuple[str, dict[str, Any]]:
    ts = f"{time.time() + next(_stamps) / 1000:.6f}"
    body = slack_body(slack_message(ts, text, user=HUMAN, channel=channel), via=via)
    return f"slack:{TEAM}:{channel}:{ts}", body


@dataclass
class Rig:
    """The fake Slack, the running process, and what it writes."""

    slack: FakeSlack
    process: asyncio.subprocess.Process
    manifest: Path
    log: Path
    data: Path
    record: Path

    def write(self, agents: dict[str, Any], **extra: Any) -> None:
        write(self.manifest, self.slack.api_url, agents, **extra)

    async def send(self, text: str, via: str, channel: str = "C0GEN") -> str:
        event_id, body = mention(text, via, channel)
        await self.slack.send_event(body, app_token=app_token(via))
        return event_id

    def decided(self, event_id: str, agent: str) -> Callable[[], bool]:
        return lambda: agent in decisions(self.log, event_id)


async def add_one_remove_one(rig: Rig) -> dict[str, Any]:
    """worker-1 added with a harness, worker-2 removed, a channel added: Slack reconnects."""
    first = await rig.send("<@U0LEAD> before", "lead")
    await until(lambda: len(decisions(rig.log, first)) == 2, "both agents' decisions")
    agents = {"lead": agent("lead"), "worker-1": agent("worker-1", rig.record)}
    rig.write(agents, channels=CHANNELS)
    rig.process.send_signal(signal.SIGHUP)
    await until(lambda: messages(rig.log, RELOADED), "the first reload")
    [line] = messages(rig.log, RELOADED)
    assert "agents added: worker-1; removed: worker-2" in line
    assert "platforms reconnected: slack" in line
    await rig.slack.wait_connected(4)  # lead and worker-1, connected anew
    second = await rig.send("<@U0W1> after", "worker-1", channel="C0OPS")
    told = lambda: second in {r["eventId"] for r in read_records(rig.record)}  # noqa: E731
    await until(told, "the added agent's harness to be told")
    assert "worker-2" not in decisions(rig.log, second)
    return agents


async def a_name_while_events_arrive(rig: Rig, agents: dict[str, Any]) -> None:
    """worker-1 is given a name people call it by; the events sent meanwhile are all taken
    (no platform reads names: nothing reconnects)."""
    before = await rig.send(CALL, "lead")
    await until(rig.decided(before, "worker-1"), "the call by name")
    agents["worker-1"] = agent("worker-1", rig.record, names=[NAME])
    rig.write(agents, channels=CHANNELS)
    acknowledged = len(rig.slack.acks)
    rig.process.send_signal(signal.SIGHUP)
    burst = [mention(f"<@U0LEAD> during {i}", "lead") for i in range(BURST)]
    for _, body in burst:
        await rig.slack.push_event(body, app_token=app_token("lead"))
    await until(lambda: len(messages(rig.log, RELOADED)) == 2, "the second reload")
    await until(lambda: len(rig.slack.acks) == acknowledged + BURST, "every event acknowledged")
    assert {event_id for event_id, _ in burst} <= stored(rig.data)
    assert messages(rig.log, RELOADED)[-1].endswith("platforms reconnected: none")
    after = await rig.send(CALL, "lead")
    await until(rig.decided(after, "worker-1"), "the call by name")
    assert decisions(rig.log, before)["worker-1"]["directedness"] != "to_me"
    assert decisions(rig.log, after)["worker-1"]["directedness"] == "to_me"


async def a_manifest_that_does_not_validate(rig: Rig, agents: dict[str, Any]) -> None:
    """Refused; the running manifest (worker-1 with its name) is kept."""
    agents["worker-1"] = {**agent("worker-1", rig.record), "lede": True}
    rig.write(agents, channels=CHANNELS)
    rig.process.send_signal(signal.SIGHUP)
    await until(lambda: messages(rig.log, "reload refused"), "the refusal")
    last = await rig.send(CALL, "lead")
    await until(rig.decided(last, "worker-1"), "the kept manifest")
    assert decisions(rig.log, last)["worker-1"]["directedness"] == "to_me"


def test_sighup_reloads_agents_and_names_keeps_what_arrives_and_refuses_a_bad_manifest(
    tmp_path: Path,
) -> None:
    data, log, manifest = tmp_path / "data", tmp_path / "run.log", tmp_path / "hup.yaml"

    async def scenario() -> int:
        async with FakeSlack(wait_timeout=60) as slack:
            for name, user in AGENTS.items():
                slack.add_bot(f"xoxb-{name}-reload", user, f"B{user[1:]}", team_id=TEAM)
            slack.members["C0GEN"] = [*AGENTS.values(), HUMAN]
            slack.members["C0OPS"] = [LEAD, W1, HUMAN]
            write(manifest, slack.api_url, {"lead": agent("lead"), "worker-2": agent("worker-2")})
            process = await start(manifest, data, log, ENV)
            rig = Rig(slack, process, manifest, log, data, tmp_path / "delivered.jsonl")
            try:
                await slack.wait_connected(2)
                await until(lambda: messages(log, "running"), "the start")
                agents = await add_one_remove_one(rig)
                await a_name_while_events_arrive(rig, agents)
                await a_manifest_that_does_not_validate(rig, agents)
                process.send_signal(signal.SIGTERM)
                return await exited(process)
            finally:
                await ended(process)

    status = asyncio.run(asyncio.wait_for(scenario(), 240))
    assert status == 0
    lines = log_lines(log)
    assert lines[-1]["message"] == "stopped"
    [refusal] = [line for line in lines if "reload refused" in line["message"]]
    assert refusal["level"] == "error"
    assert "lede" in refusal["message"] and "\n" not in refusal["message"]
    assert len(messages(log, RELOADED)) == 2
    assert "Traceback" not in log.read_text()
