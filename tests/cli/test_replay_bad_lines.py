"""`c2a replay` over a trace with bad lines of every kind among good ones: each bad line is
reported with its number and reason, and the good ones replay exactly as they do alone."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from builders import LEAD, LOCAL, W1, line, slack_body, slack_message

from c2a.cli import main
from c2a.replay import NORMALISERS
from core.events import ChatEvent

AT = "2026-01-01T00:00:01Z"

normalise_slack = NORMALISERS["slack"]


def broken(payload: Mapping[str, Any]) -> ChatEvent | None:
    """The Slack normaliser with a bug that a field named `break` sets off."""
    if "break" in payload:
        raise IndexError("list index out of range")
    return normalise_slack(payload)


def good(n: int, text: str) -> bytes:
    event = slack_message(f"17672256{n:02d}.000100", text, channel="D0LEAD", channel_type="im")
    return line(AT, "slack", slack_body(event, via="lead")).encode()


def spoiled(n: int, key: str, value: Any, **extra: Any) -> bytes:
    event = slack_message(f"17672256{n:02d}.000100", "spoiled", channel="D0LEAD", channel_type="im")
    body = {**slack_body(event, via="lead"), **extra}
    body["event"][key] = value
    return line(AT, "slack", body).encode()


def replay(tmp_path: Path, name: str, lines: list[bytes]) -> tuple[int, str, str]:
    trace = tmp_path / f"{name}.jsonl"
    trace.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / f"{name}.out.jsonl"
    status = main(["replay", "--manifest", str(LOCAL), str(trace), "--out", str(out)])
    return status, out.read_text(), str(trace)


def test_each_bad_line_is_reported_and_every_good_line_replays_as_it_does_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(NORMALISERS, "slack", broken)
    deep: dict[str, Any] = {}
    for _ in range(900):
        deep = {"d": deep}
    goods = [
        good(1, f"<@{LEAD}> the build is red"),
        good(3, f"<@{W1}> can you look?"),
        good(5, "thanks all"),
        good(7, f"<@{LEAD}> fixed now"),
        good(9, "<!here> deploying"),
    ]
    bads = {
        "at past the year 9999 in UTC": line("9999-12-31T23:59:59-05:00", "slack", {}).encode(),
        "at before the year 1 in UTC": line("0001-01-01T00:00:00+05:00", "slack", {}).encode(),
        "at the end of time": line("9999-12-31T23:59:59Z", "slack", {}).encode(),
        "bytes that are not UTF-8": good(2, "cafe").replace(b"cafe", b"caf\xe9"),
        "a list where the ts belongs": spoiled(4, "ts", ["1767225604.000100"]),
        "a 5,000-digit ts": spoiled(6, "ts", "9" * 5000),
        "a platform that is a list": b'{"at": "2026-01-01T00:00:01Z", "platform": []}',
        "a bad payload too deep to store": spoiled(8, "ts", None, blocks=deep),
        "a normaliser's own bug": line(AT, "slack", {"break": True}).encode(),
    }
    b = list(bads.values())
    mixed = [goods[0], *b[0:3], goods[1], *b[3:5], goods[2], *b[5:7], goods[3], *b[7:9], goods[4]]

    alone_status, alone, _ = replay(tmp_path, "alone", goods)
    capsys.readouterr()
    status, together, trace = replay(tmp_path, "mixed", mixed)
    err = capsys.readouterr().err

    assert (alone_status, status) == (0, 1)
    assert together == alone and '"chat/deliver"' in alone
    assert "Traceback" not in err
    reported = {int(row.split(":")[1]): row for row in err.splitlines() if row.startswith(trace)}
    bad_numbers = [n for n, text in enumerate(mixed, start=1) if text not in goods]
    assert sorted(reported) == bad_numbers
    reasons = [reported[n].split(": ", 1)[1] for n in bad_numbers]
    assert reasons[0].startswith("at is not a time in years 1970-2999")
    assert reasons[1].startswith("at is not a time in years 1970-2999")
    assert reasons[2].startswith("at is not a time in years 1970-2999")
    assert reasons[3] == "not UTF-8: byte 0xe9 at column " + reasons[3].rsplit(" ", 1)[1]
    assert reasons[4] == "Slack payload field 'event.ts' should be string, not list"
    assert (
        reasons[5] == "Slack payload field 'event.ts' is too long: 5,000 characters, at most 1,024"
    )
    assert reasons[6] == "platform must be one of discord, slack, webchat, not a list"
    assert reasons[7] == "Slack payload is missing 'event.ts'"
    assert reasons[8] == "unexpected IndexError: list index out of range"
    assert all(len(reason) < 200 for reason in reasons)


def test_a_trace_line_that_is_not_utf_8_is_named_by_its_first_bad_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, trace = replay(tmp_path, "latin1", [b'{"at": "caf\xe9"}', good(1, "hi")])
    err = capsys.readouterr().err
    assert status == 1 and out.count('"chat/deliver"') >= 1
    assert f"{trace}:1: not UTF-8: byte 0xe9 at column 12" in err.splitlines()
