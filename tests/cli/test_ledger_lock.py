"""One `c2a run` a SQLite ledger: a second one on the same file, or a `c2a replay` into it, is
refused before it touches the ledger, naming the process that holds it; a holder killed with
SIGKILL lets go at once. The processes are real `c2a run`s on the web chat."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from builders import LOCAL

from c2a.ledger_lock import LedgerLock
from core.errors import StoreError

TRACE = LOCAL.parent / "local-trace.jsonl"
WAIT_S = 60.0  # the bound on every wait, for a slow and busy machine


def test_a_second_lock_on_one_ledger_is_refused_until_the_first_is_given_back(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "team.sqlite3"
    first, second = LedgerLock(ledger), LedgerLock(ledger)
    first.take()
    with pytest.raises(StoreError, match=rf"in use by a running c2a \(process {os.getpid()}\)"):
        second.take()
    first.release()
    second.take()
    second.release()
    nowhere = LedgerLock(tmp_path / "missing" / "team.sqlite3")
    with pytest.raises(StoreError, match=r"cannot open the ledger at .*missing.*: No such file"):
        nowhere.take()


def manifest(directory: Path) -> Path:
    """The example team on the web chat alone, on a port of the system's choosing."""
    data = yaml.safe_load(LOCAL.read_text())
    data["webchat"]["port"] = 0
    for config in data["agents"].values():
        for key in ("slack", "discord", "harness"):
            config.pop(key, None)
    path = directory / "team.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def start(path: Path, data: Path, log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "c2a.cli", "run", "--manifest", str(path)]
    with log.open("wb") as sink:
        return subprocess.Popen(
            [*command, "--data-dir", str(data)], stdout=sink, stderr=subprocess.STDOUT
        )


def ready(log: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while "web chat ready" not in log.read_text():
        assert time.monotonic() < deadline, f"no ready line: {log.read_text()}"
        time.sleep(0.05)


def rows(data: Path) -> int:
    with sqlite3.connect(data / "local.sqlite3") as db:
        return int(db.execute("SELECT count(*) FROM events").fetchone()[0])


def test_a_second_run_on_one_ledger_is_refused_and_a_killed_one_lets_go(tmp_path: Path) -> None:
    path, data = manifest(tmp_path), tmp_path / "data"
    logs = [tmp_path / f"run{n}.log" for n in range(3)]
    first = start(path, data, logs[0])
    try:
        ready(logs[0])
        before = rows(data)
        second = start(path, data, logs[1])
        try:
            status = second.wait(WAIT_S)
        finally:
            second.kill()
        assert status == 2
        refusal = logs[1].read_text().strip().splitlines()[-1]
        assert refusal == (
            f"c2a: the ledger {data / 'local.sqlite3'} is in use by a running c2a (process "
            f"{first.pid}), and a second writer would have every message answered twice: stop "
            "that one, or use another ledger (--data-dir for c2a run, --store for c2a replay)"
        )
        replayed = subprocess.run(
            [sys.executable, "-m", "c2a.cli", "replay", "--manifest", str(path), str(TRACE)]
            + ["--store", str(data / "local.sqlite3")],
            capture_output=True,
            check=False,
            text=True,
            timeout=WAIT_S,
        )
        assert replayed.returncode == 2
        assert replayed.stderr.startswith(f"c2a: the ledger {data / 'local.sqlite3'} is in use")
        assert "Traceback" not in logs[1].read_text()
        assert rows(data) == before
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(WAIT_S)
    third = start(path, data, logs[2])
    try:
        ready(logs[2])
    finally:
        third.terminate()
        assert third.wait(WAIT_S) == 0
