"""A hostile or mistaken manifest stops `c2a check` and `c2a run` with one line and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fuzz.bounds import bounded
from hostile_yaml import BILLION_LAUGHS, BILLION_LAUGHS_REFUSAL

from c2a.cli import main
from core.yaml_safe import MAX_BYTES, MAX_DEPTH
from harness_bridge.backends.registry import available

ROOT = Path(__file__).resolve().parents[2]
HEAD = b"version: 1\nworkspace: w\n"

FINDINGS = {
    "alias bomb": (BILLION_LAUGHS, BILLION_LAUGHS_REFUSAL),
    "duplicate key": (
        HEAD + b"agents:\n  a: {harness: {backend: openai, model: x}}\n  a: {}\n",
        "line 5, column 3: agents: key 'a' appears twice (first at line 4, column 3)",
    ),
    "unknown backend": (
        HEAD + b"agents: {a: {harness: {backend: nope}}}\n",
        f"agents.a.harness.backend: unknown backend 'nope'; installed: {', '.join(available())}",
    ),
    "invalid UTF-8": (
        HEAD + b"agents: {a\xc3: {}}\n",
        "line 3, column 11: not UTF-8 text (byte 0xc3)",
    ),
    "deep nesting": (
        HEAD
        + b"agents: {a: {harness: {backend: openai, x: "
        + b"[" * 5000
        + b"]" * 5000
        + b"}}}\n",
        f"nested deeper than {MAX_DEPTH} levels",
    ),
    "number as key": (
        HEAD + b"agents: {a: {}}\nchannels:\n  800000000000000010: {}\n",
        "line 5, column 3: channels: key '800000000000000010' reads as int, not text; quote it",
    ),
    "too large": (
        HEAD + b"agents: {a: {}}\n" + b"#" * MAX_BYTES + b"\n",
        f"larger than {MAX_BYTES} bytes",
    ),
}

COMMANDS = {
    "check": lambda path, data: ["check", str(path)],
    "run": lambda path, data: ["run", "--manifest", str(path), "--data-dir", str(data)],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("finding", FINDINGS)
def test_each_manifest_mistake_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], finding: str, command: str
) -> None:
    text, expected = FINDINGS[finding]
    path = tmp_path / "bad.yaml"
    path.write_bytes(text)
    with bounded(f"c2a {command} on a manifest with a {finding}", seconds=30):
        # a `run` that accepted the manifest would otherwise serve until stopped
        status = main(COMMANDS[command](path, tmp_path / "data"))
    assert status == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"c2a: {path}: ") and expected in line
    assert not (tmp_path / "data").exists()  # refused before anything started


@pytest.mark.parametrize("command", COMMANDS)
def test_the_real_command_refuses_an_alias_bomb_without_a_traceback(
    tmp_path: Path, command: str
) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_bytes(BILLION_LAUGHS)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "c2a.cli", *COMMANDS[command](path, tmp_path / "data")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr == f"c2a: {path}: {BILLION_LAUGHS_REFUSAL}\n"
