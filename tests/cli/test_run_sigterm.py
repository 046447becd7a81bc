"""SIGTERM during a burst of Slack events loses nothing and repeats nothing.

`c2a run` runs as a real process: the real slack-bolt against the fake Slack, the SQLite ledger
on disk, and a stdio harness (this module, run as a script) that appends every `chat/deliver`
it receives to a file before acknowledging it. The test sends a burst of mentions, stops the
process with SIGTERM in the middle of it, starts it again on the same data directory, and
checks that every event the process acknowledged to Slack reached the harness, each exactly
once. The delivery protocol allows one exception, and the test allows only it: a delivery
whose answer the host never recorded (in flight when the process stopped, at most a window's
worth; or timed out) is sent again, with the same event id and a higher attempt, in order,
before anything newer (`redeliveries.py`).

    python test_run_sigterm.py RECORD [EVERY]   # the recording harness; with EVERY, it also
                                                # replies to every EVERY-th mention of the burst
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import signal
import sqlite3
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from builders import HUMAN, LEAD, TEAM, slack_body, slack_message
from fakes.slack import FakeSlack
from redeliveries import assert_only_allowed_repeats

from harness_bridge.jsonrpc import PROTOCOL_VERSIONS, Capabilities, ClientInfo
from harness_bridge.rpc import Connection
from harness_bridge.session import accept_initialize
from harness_bridge.transport import StreamTransport
from harness_bridge.wire import METHOD_DELIVER

BOT_TOKEN = "xoxb-lead-burst"
APP_TOKEN = "xapp-1-lead-burst"
ENV = {"SLACK_LEAD_BOT_TOKEN": BOT_TOKEN, "SLACK_LEAD_APP_TOKEN": APP_TOKEN}
BURST = 200
STOP_AT = 50  # acknowledged events before SIGTERM is sent
WAIT = 120.0  # the bound on every wait: generous, for a slow and busy machine
HARNESS_DELAY = 0.02  # the harness takes its time, so deliveries are behind at the stop
TESTS = Path(__file__).resolve().parents[1]


def test_sigterm_during_a_burst_loses_no_acknowledged_event_and_repeats_none(
    tmp_path: Path,
) -> None:
    record = tmp_path / "delivered.jsonl"
    data = tmp_path / "data"
    logs = [tmp_path / "first.log", tmp_path / "second.log"]

    async def scenario() -> tuple[dict[str, str], set[str], list[int]]:
        async with FakeSlack(wait_timeout=WAIT) as slack:
            slack.add_bot(BOT_TOKEN, LEAD, "B0LEAD", team_id=TEAM)
            slack.members["C0GEN"] = [LEAD, HUMAN]
            manifest = write_manifest(tmp_path, slack.api_url, record)
            pushed: dict[str, str] = {}  # envelope id -> event id

            first = await start(manifest, data, logs[0])
            try:
                await slack.wait_connected(1)
                await until(lambda: "harness for lead:" in logs[0].read_text(), "the harness")
                await send_burst_and_sigterm(slack, first, pushed)
                statuses = [await exited(first)]
            finally:
                await ended(first)
            acknowledged = acknowledged_events(slack, pushed)

            second = await start(manifest, data, logs[1])
            try:
                await slack.wait_connected(2)
                await until(
                    lambda: (
                        acknowledged <= {r["eventId"] for r in read_records(record)}
                        and pending_deliveries(data) == 0
                    ),
                    "every acknowledged event to reach the harness",
                )
                second.send_signal(signal.SIGTERM)
                statuses.append(await exited(second))
            finally:
                await ended(second)
            return pushed, acknowledged, statuses

    pushed, acknowledged, statuses = asyncio.run(scenario())

    assert statuses == [0, 0]
    for log in logs:
        assert_clean_shutdown(log)
    # The second start read back the memory the first saved as it stopped, and folded the
    # ledger after it: what the test asks of the restart holds through that path.
    assert "the memory saved at the last stop is read back" in logs[1].read_text()
    assert STOP_AT <= len(acknowledged) <= len(pushed)

    records = read_records(record)
    delivered = [r["eventId"] for r in records]
    assert acknowledged <= set(delivered)  # nothing acknowledged is lost
    assert set(delivered) <= set(pushed.values())
    # Nothing reached the harness twice, but for what the protocol allows: the deliveries in
    # flight at the stop (their answers never recorded) come again, first after the restart,
    # in order, as new attempts of the same events.
    assert_only_allowed_repeats(records)


# ---- the run and its evidence ----------------------------------------------------------------


async def send_burst_and_sigterm(
    slack: FakeSlack, process: asyncio.subprocess.Process, pushed: dict[str, str]
) -> None:
    """Send the burst; SIGTERM the process once `STOP_AT` events are acknowledged, and go on
    sending until it hangs up. `pushed` gets each sent envelope's event id."""
    term_sent = False
    for event_id, body in burst(BURST):
        if not term_sent and len(acknowledged_events(slack, pushed)) >= STOP_AT:
            process.send_signal(signal.SIGTERM)
            term_sent = True
        try:
            async with asyncio.timeout(5):
                pushed[await slack.push_event(body, app_token=APP_TOKEN)] = event_id
        except (TimeoutError, ConnectionError):
            break  # the process has hung up: the rest of the burst is never sent
        await asyncio.sleep(0.005)  # a burst, not one write
    if not term_sent:
        await until(lambda: len(acknowledged_events(slack, pushed)) >= STOP_AT, "the acks")
        process.send_signal(signal.SIGTERM)


def acknowledged_events(slack: FakeSlack, pushed: dict[str, str]) -> set[str]:
    """The events of the burst the process has acknowledged to Slack."""
    return {pushed[a["envelope_id"]] for a in slack.acks if a["envelope_id"] in pushed}


def assert_clean_shutdown(log: Path) -> None:
    """Every line on stderr is a JSON log line (a traceback or a stray print would not be),
    none an error, and the shutdown is said from its start to `stopped`, the last line."""
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
    lines = [json.loads(line) for line in text.splitlines()]
    messages = [line["message"] for line in lines]
    assert "stopping: closing platform connections" in messages, log
    assert messages[-1] == "stopped", log
    assert not [line for line in lines if line["level"] in ("error", "critical")], log


def write_manifest(
    directory: Path, api_url: str, record: Path, *harness_args: str, **more: Any
) -> Path:
    """The burst workspace's manifest, its harness this module with `harness_args`, and `more`
    top-level keys (`attention`, ...)."""
    harness = {
        "backend": "stdio",
        "command": [sys.executable, str(Path(__file__).resolve()), str(record), *harness_args],
        "env": {
            "PYTHONPATH": os.pathsep.join(str(p) for p in (TESTS.parent, TESTS, TESTS / "cli"))
        },
        "restart_after_s": 0.5,
    }
    agent = {
        "lead": True,
        "slack": {
            "user_id": LEAD,
            "bot_token_env": "SLACK_LEAD_BOT_TOKEN",
            "app_token_env": "SLACK_LEAD_APP_TOKEN",
        },
        "harness": harness,
    }
    manifest = {
        "version": 1,
        "workspace": "burst",
        "slack": {"team_id": TEAM, "api_url": api_url},
        "agents": {"lead": agent},
        "channels": {"C0GEN": {}},
        **more,
    }
    path = directory / "burst.yaml"
    path.write_text(yaml.safe_dump(manifest))
    return path


def burst(n: int) -> list[tuple[str, dict[str, Any]]]:
    """`n` mentions of the lead by a person, timestamped now (must_respond expires), with the
    event ids the host gives them."""
    start = time.time()
    mentions = []
    for i in range(n):
        ts = f"{start + i / 1000:.6f}"
        body = slack_body(slack_message(ts, f"<@{LEAD}> burst {i}", user=HUMAN), via="lead")
        mentions.append((f"slack:{TEAM}:C0GEN:{ts}", body))
    return mentions


async def start(
    manifest: Path, data: Path, log: Path, environ: Mapping[str, str] = ENV
) -> asyncio.subprocess.Process:
    with log.open("wb") as stderr:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "c2a.cli",
            "run",
            "-m",
            str(manifest),
            "--data-dir",
            str(data),
            "--log-format",
            "json",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, **environ},
        )


async def exited(process: asyncio.subprocess.Process) -> int:
    async with asyncio.timeout(WAIT):
        return await process.wait()


async def ended(process: asyncio.subprocess.Process) -> None:
    """Leave no process behind, whatever failed."""
    if process.returncode is None:
        process.kill()
        await process.wait()


async def until(predicate: Callable[[], bool], what: str) -> None:
    try:
        async with asyncio.timeout(WAIT):
            while not predicate():
                await asyncio.sleep(0.1)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def read_records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines if line.endswith("}")]


def pending_deliveries(data: Path) -> int:
    """Deliveries the ledger still has to send (read by a second connection, as the running
    process writes)."""
    ledger = data / "burst.sqlite3"
    if not ledger.exists():
        return -1
    with sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=WAIT) as db:
        (count,) = db.execute("SELECT count(*) FROM deliveries WHERE status = 'pending'").fetchone()
    return int(count)


# ---- the recording harness ---------------------------------------------------------------


async def record_deliveries(record: Path, reply_every: int = 0) -> None:
    """Speak the harness side over stdio: append each delivery's event id, attempt and place in
    the order received to `record`, flushed, then acknowledge it. With `reply_every`, every
    that many-th mention of the burst (`burst 0`, `burst <every>`, ...) is first answered in
    the channel with the text `reply()` gives, under an idempotency key of its event, so a
    delivery made again (after a crash) asks for the same post."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    connection = Connection(StreamTransport(reader, writer), name="host")
    accept_initialize(
        connection,
        ClientInfo(name="recording-harness", version="0.0.1"),
        Capabilities.model_validate({"delivery": {"ack": True}, "injection": {"buffered": True}}),
        versions=list(PROTOCOL_VERSIONS),
    )
    received = itertools.count()  # the order deliveries came in; a line with a reply is
    # written only once the reply is queued, after the lines of deliveries that came later
    with record.open("a", encoding="utf-8") as out:

        async def deliver(params: dict[str, Any] | None) -> dict[str, Any]:
            assert params is not None
            line: dict[str, Any] = {
                "eventId": params["eventId"],
                "attempt": params["reliability"]["attempt"],
                "pid": os.getpid(),
                "received": next(received),
            }
            number = re.search(r"burst (\d+)", json.dumps(params.get("content")))
            if reply_every and number and int(number[1]) % reply_every == 0:
                line["reply"] = await send_reply(connection, params)
            out.write(json.dumps(line) + "\n")
            out.flush()
            await asyncio.sleep(HARNESS_DELAY)
            return {"accepted": True, "duplicate": False}

        connection.on_request(METHOD_DELIVER, deliver)
        connection.start()
        await connection.closed.wait()


def reply(event_id: str) -> str:
    """The text the harness answers an event with: one per event, to count posts by."""
    return f"answer to {event_id}"


async def send_reply(connection: Connection, delivery: dict[str, Any]) -> str:
    """Answer the delivered event where it was posted; the tool's answer (`queued`,
    `duplicate`, a refusal)."""
    event_id = delivery["eventId"]
    arguments = {
        "target": {"conversation": delivery["conversation"]["id"]},
        "text": reply(event_id),
        "inReplyTo": event_id,
        "idempotencyKey": f"answer:{event_id}",
    }
    result = await connection.request(
        "tools/call", {"name": "chat_send_message", "arguments": arguments}
    )
    if result["isError"]:
        return f"refused: {result['content'][0]['text']}"
    return str(result["structuredContent"]["status"])


if __name__ == "__main__":
    every = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    asyncio.run(record_deliveries(Path(sys.argv[1]), every))
