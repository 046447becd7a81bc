"""The IRC benchmark's pure conversion: corpus lines to a Slack trace and a manifest."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import irc_replay
from irc_convert import (
    IrcRecord,
    build_manifest,
    choose_agents,
    to_slack_text,
    to_trace,
    user_id_for,
)


def line(
    idx: int,
    author: str | None,
    text: str,
    ts: str | None = "2010-03-01T10:00:00",
    *,
    kind: str = "message",
    addressee: list[str] | None = None,
) -> IrcRecord:
    return {
        "id": f"test/f:{idx}",
        "file": "f",
        "idx": idx,
        "ts": ts,
        "ts_precision": "minute",
        "author": author,
        "kind": kind,
        "text": text,
        "addressee": addressee or [],
        "annotated": True,
        "reply_to": [],
    }


RECORDS = [
    line(0, "bob", "hi all"),
    line(1, None, "=== carol has joined #test", kind="system"),
    line(2, "carol", "bob: how do I mount a disk?", addressee=["bob"]),
    line(3, "alice", "try mount, carol", ts="2010-03-01T10:01:00"),
    line(4, "bob", "waves", ts="2010-03-01T10:01:00", kind="action"),
    line(5, "alice", "carol, see the wiki", ts=None, addressee=["carol"]),
    line(6, "carol", "thanks", ts="2010-03-01T10:02:00"),
]


def messages(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t["payload"]["event"] for t in trace if t["payload"]["event"]["type"] == "message"]


def test_the_most_active_authors_become_agents_with_ties_broken_by_nick() -> None:
    # alice, bob and carol all speak twice: the tie goes by nick.
    assert choose_agents(RECORDS, 2) == {"agent-1": "alice", "agent-2": "bob"}
    busier = [*RECORDS, line(7, "carol", "dances", kind="action"), line(8, None, "", kind="system")]
    assert choose_agents(busier, 5) == {"agent-1": "carol", "agent-2": "alice", "agent-3": "bob"}


def test_user_ids_are_deterministic_and_slack_shaped() -> None:
    assert user_id_for("bob") == user_id_for("bob")
    assert user_id_for("bob") != user_id_for("alice")
    assert user_id_for("bob").startswith("U")
    assert len(user_id_for("bob")) == 11
    assert user_id_for("bob")[1:] == user_id_for("bob")[1:].upper()


def test_a_leading_nick_colon_becomes_a_native_mention() -> None:
    ids = {"bob": "U111"}
    assert to_slack_text("bob: how do I mount?", ["bob"], ids) == "<@U111> how do I mount?"
    assert to_slack_text("Bob, hi", ["bob"], ids) == "<@U111> hi"


def test_a_nick_inside_the_sentence_is_left_alone() -> None:
    ids = {"carol": "U222"}
    assert to_slack_text("try mount, carol", [], ids) == "try mount, carol"
    assert to_slack_text("ask carol: she knows", ["carol"], ids) == "ask carol: she knows"


def test_an_addressee_without_an_id_stays_text() -> None:
    assert to_slack_text("dave: hello", ["dave"], {"bob": "U111"}) == "dave: hello"


def test_angle_brackets_in_irc_text_are_escaped_like_slack_does() -> None:
    assert to_slack_text("a <unconvertable> & b", [], {}) == "a &lt;unconvertable&gt; &amp; b"


def test_system_lines_are_skipped_and_order_is_kept() -> None:
    texts = [m["text"] for m in messages(to_trace(RECORDS, {}).lines)]
    assert len(texts) == 6
    assert "has joined" not in " ".join(texts)
    assert texts[1] == f"<@{user_id_for('bob')}> how do I mount a disk?"
    assert texts[-1] == "thanks"


def test_an_action_is_a_me_message() -> None:
    events = messages(to_trace(RECORDS, {}).lines)
    assert events[3]["subtype"] == "me_message"
    assert "subtype" not in events[0]


def test_lines_of_one_minute_are_spread_inside_it_with_strictly_increasing_ts() -> None:
    lines = to_trace(RECORDS, {}).lines
    stamps = [float(m["ts"]) for m in messages(lines)]
    assert stamps == sorted(set(stamps))
    minute = stamps[0]
    # bob and carol share 10:00 (the system line between them does not count): 0 s and 30 s.
    assert stamps[1] - minute == 30
    # alice, bob and the line without ts (it inherits 10:01) share the next minute in thirds.
    assert [s - minute for s in stamps[2:5]] == [60, 80, 100]
    assert lines[-1]["at"] == "2010-03-01T10:02:00.000000Z"


def test_a_log_going_back_in_time_still_gives_increasing_ts() -> None:
    records = [
        line(0, "a", "x", ts="2004-11-15T12:59:00"),
        line(1, "b", "y", ts="2004-11-15T01:00:00"),
        line(2, "a", "z", ts="2004-11-15T01:02:00"),
        line(3, "b", "w", ts="2004-11-16T09:00:00"),
    ]
    lines = to_trace(records, {}).lines
    stamps = [float(m["ts"]) for m in messages(lines)]
    assert stamps[0] < stamps[1] < stamps[2] < stamps[3]
    assert stamps[2] - stamps[1] == 120
    assert lines[-1]["at"] == "2004-11-16T09:00:00.000000Z"


def test_the_ts_maps_back_to_the_corpus_line() -> None:
    conversion = to_trace(RECORDS, {})
    events = messages(conversion.lines)
    assert [conversion.key_by_ts[e["ts"]] for e in events] == [("f", i) for i in (0, 2, 3, 4, 5, 6)]


def test_agents_join_the_channel_before_the_first_message() -> None:
    agents = {"agent-1": "bob", "agent-2": "alice"}
    lines = to_trace(RECORDS, agents).lines
    joins = [t["payload"]["event"] for t in lines[:2]]
    assert [j["type"] for j in joins] == ["member_joined_channel"] * 2
    assert [j["user"] for j in joins] == [user_id_for("bob"), user_id_for("alice")]
    assert all("via" not in t for t in lines)
    assert lines[0]["at"] < lines[1]["at"] < lines[2]["at"]
    assert lines[2]["payload"]["event"]["type"] == "message"
    assert len({t["payload"]["event_id"] for t in lines}) == len(lines)


def test_the_manifest_makes_agent_1_the_lead() -> None:
    manifest = build_manifest({"agent-1": "bob", "agent-2": "alice"})
    assert manifest["version"] == 1
    assert manifest["slack"] == {"team_id": "T0IRC"}
    assert manifest["agents"] == {
        "agent-1": {"lead": True, "slack": {"user_id": user_id_for("bob")}},
        "agent-2": {"slack": {"user_id": user_id_for("alice")}},
    }


def test_a_missing_data_file_is_one_line_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert irc_replay.main([str(tmp_path / "absent.jsonl.gz")]) == 2
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 1
    assert "absent.jsonl.gz" in printed[0]
