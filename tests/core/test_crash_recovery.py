"""Killing a replay with SIGKILL mid-stream loses no appended event and duplicates none."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from builders import LEAD, LOCAL, W1, W2, line, slack_body, slack_join, slack_message

EVENTS = 12_000


def write_trace(path: Path) -> None:
    lines = [
        line("2026-01-01T00:00:00Z", "slack", slack_body(slack_join(u))) for u in (LEAD, W1, W2)
    ]
    for n in range(EVENTS):
        second = 1767225600 + n
        text = f"<@{LEAD}> status of job {n}?" if n % 10 == 0 else f"chatter line {n}"
        event = slack_message(f"{second}.000100", text)
        minute, sec = divmod(n, 60)
        hour, minute = divmod(minute, 60)
        lines.append(
            line(f"2026-01-01T{hour:02d}:{minute:02d}:{sec:02d}Z", "slack", slack_body(event))
        )
    path.write_text("\n".join(lines) + "\n")


def replay_command(trace: Path, store: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "c2a.cli",
        "replay",
        "--manifest",
        str(LOCAL),
        str(trace),
        "--store",
        str(store),
        "--out",
        str(store.with_suffix(".out")),
    ]


def count(store: Path, sql: str) -> int:
    with sqlite3.connect(store, timeout=5) as db:
        return int(db.execute(sql).fetchone()[0])


def test_sigkill_mid_replay_loses_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    trace, store = tmp_path / "trace.jsonl", tmp_path / "ledger.sqlite3"
    write_trace(trace)
    process = subprocess.Popen(replay_command(trace, store), cwd=Path(__file__).parents[2])
    deadline = time.monotonic() + 60
    appended = 0
    while time.monotonic() < deadline and process.poll() is None:
        if store.exists():
            try:
                appended = count(store, "SELECT COUNT(*) FROM events")
            except sqlite3.OperationalError:
                appended = 0
            if appended >= 1000:
                break
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    assert process.returncode == -signal.SIGKILL, "the replay finished before it could be killed"
    with sqlite3.connect(store) as db:
        before = {row[0] for row in db.execute("SELECT id FROM events")}
    assert 1000 <= len(before) < EVENTS + 3

    finished = subprocess.run(
        replay_command(trace, store),
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr

    with sqlite3.connect(store) as db:
        after = {row[0] for row in db.execute("SELECT id FROM events")}
        seqs = [row[0] for row in db.execute("SELECT seq FROM events ORDER BY seq")]
        per_event = db.execute(
            "SELECT COUNT(*) FROM (SELECT event_id FROM deliveries"
            " WHERE event_id NOT LIKE '%joined%' GROUP BY event_id HAVING COUNT(*) != 3)"
        ).fetchone()[0]
        messages = db.execute(
            "SELECT COUNT(*) FROM deliveries WHERE event_id NOT LIKE '%joined%'"
        ).fetchone()[0]
    assert before <= after
    assert len(after) == EVENTS + 3
    assert seqs == list(range(1, EVENTS + 4))
    assert per_event == 0
    assert messages == 3 * EVENTS
