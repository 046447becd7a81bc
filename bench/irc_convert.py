"""Pure conversion of IRC disentanglement corpus lines into a Slack-shaped `c2a replay` trace.

It owns the corpus record type, the choice of agents, Slack user ids and text, the spreading of
logged times into strictly increasing Slack `ts`, the workspace manifest and the trace itself;
no I/O. `irc_replay.py` runs the replay over its output and reports.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

__all__ = [
    "Conversion",
    "IrcRecord",
    "Key",
    "build_manifest",
    "choose_agents",
    "is_speech",
    "spread_times",
    "to_slack_text",
    "to_trace",
    "user_id_for",
]

TEAM = "T0IRC"
APP = "A0IRC"
CHANNEL = "C0UBUNTU"
SPEAKING_KINDS = ("message", "action")
# channel-two has times without a date; any fixed day keeps them valid Slack timestamps.
DATELESS_DAY = "2000-01-01"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Key = tuple[str, int]  # (upstream file, idx): idx and reply_to are numbered per upstream file


class IrcRecord(TypedDict):
    """One line of the corpus, as its README describes it (only the fields used here)."""

    id: str
    file: str
    idx: int
    ts: str | None
    ts_precision: str
    author: str | None
    kind: str
    text: str
    addressee: list[str]
    annotated: bool
    reply_to: list[int] | None


@dataclass(frozen=True, slots=True)
class Conversion:
    """A trace ready for `c2a replay`, and the map from Slack `ts` back to the corpus line."""

    lines: list[dict[str, Any]]
    key_by_ts: dict[str, Key]


def user_id_for(nick: str) -> str:
    """Return a deterministic Slack-shaped user id for an IRC nick ("U" + 10 hex digits)."""
    return "U" + hashlib.sha1(nick.encode()).hexdigest()[:10].upper()


def is_speech(record: IrcRecord) -> bool:
    """Return whether a corpus line becomes a Slack message: a message or action with an author."""
    return record["kind"] in SPEAKING_KINDS and record["author"] is not None


def choose_agents(records: Iterable[IrcRecord], n: int) -> dict[str, str]:
    """Return `{"agent-1": nick, ...}` for the n most active authors (ties broken by nick)."""
    counts = Counter(r["author"] for r in records if is_speech(r))
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return {f"agent-{i}": nick for i, (nick, _) in enumerate(ranked[:n], start=1) if nick}


def build_manifest(agents: Mapping[str, str]) -> dict[str, Any]:
    """Return the workspace manifest: one Slack identity per agent, the first one the lead."""
    entries: dict[str, Any] = {}
    for position, (agent_id, nick) in enumerate(agents.items()):
        entry: dict[str, Any] = {"lead": True} if position == 0 else {}
        entry["slack"] = {"user_id": user_id_for(nick)}
        entries[agent_id] = entry
    return {
        "version": 1,
        "workspace": "irc",
        "slack": {"team_id": TEAM},
        "agents": entries,
        "channels": {},
    }


def _escape(text: str) -> str:
    # Slack escapes these three in message text; raw "<unconvertable>" would read as markup.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_slack_text(text: str, addressees: Sequence[str], user_ids: Mapping[str, str]) -> str:
    """Return the Slack text of an IRC line, a leading `nick:` or `nick,` made a native mention.

    Only a prefix naming one of `addressees` that has a user id is replaced (IRC nicks compare
    without case); the rest of the text is kept, and a nick inside the sentence stays text.
    """
    for nick in addressees:
        if nick not in user_ids:
            continue
        match = re.match(re.escape(nick) + r"\s*[:,]", text, flags=re.IGNORECASE)
        if match:
            return f"<@{user_ids[nick]}>" + _escape(text[match.end() :])
    return _escape(text)


def _base_time(ts: str) -> datetime:
    if ts.startswith("T"):
        ts = DATELESS_DAY + ts
    return datetime.fromisoformat(ts).replace(tzinfo=UTC)


def spread_times(stamps: Sequence[tuple[str, int]]) -> list[int]:
    """Return strictly increasing microsecond times for `(ts, period seconds)` in log order.

    The k consecutive lines that share one logged `ts` are spread evenly over its period (line
    i of k at ts + period*i/k). Where the log goes back in time (the 12-hour clock of the 2004-5
    #ubuntu logs rolling over 12:59 to 01:00), what follows is shifted forward by whole periods,
    keeping its gaps, until a logged time is later than the last one given again.
    """
    times: list[int] = []
    offset = 0
    start = 0
    while start < len(stamps):
        ts, period = stamps[start]
        end = start
        while end < len(stamps) and stamps[end][0] == ts:
            end += 1
        period_us = period * 1_000_000
        logged = (_base_time(ts) - EPOCH) // timedelta(microseconds=1)
        if not times or logged > times[-1]:
            offset = 0
        base = logged + offset
        if times and base <= times[-1]:
            shift = -(-(times[-1] - base + 1) // period_us) * period_us
            offset += shift
            base += shift
        k = end - start
        times.extend(base + period_us * i // k for i in range(k))
        start = end
    return times


def _slack_ts(us: int) -> str:
    seconds, micros = divmod(us, 1_000_000)
    return f"{seconds}.{micros:06d}"


def _rfc3339(us: int) -> str:
    return (EPOCH + timedelta(microseconds=us)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _envelope(number: int, us: int, event: dict[str, Any]) -> dict[str, Any]:
    return {
        "token": "x",
        "team_id": TEAM,
        "api_app_id": APP,
        "type": "event_callback",
        "event_id": f"Ev{number:08d}",
        "event_time": us // 1_000_000,
        "event": event,
    }


def _trace_line(number: int, us: int, event: dict[str, Any]) -> dict[str, Any]:
    return {"at": _rfc3339(us), "platform": "slack", "payload": _envelope(number, us, event)}


def to_trace(records: Sequence[IrcRecord], agents: Mapping[str, str]) -> Conversion:
    """Convert corpus lines to trace lines: agents join the channel first, then every speech.

    System lines and lines without an author are skipped; a line without `ts` takes the one
    before it. Every author gets the id of `user_id_for`.
    """
    speeches: list[IrcRecord] = []
    stamps: list[tuple[str, int]] = []
    previous = DATELESS_DAY + "T00:00:00"
    for record in records:
        previous = record["ts"] or previous
        if is_speech(record):
            speeches.append(record)
            stamps.append((previous, 1 if record["ts_precision"] == "second" else 60))
    user_ids = {r["author"]: user_id_for(r["author"]) for r in speeches if r["author"]}
    times = spread_times(stamps)
    first = times[0] if times else 0
    lines: list[dict[str, Any]] = []
    for number, nick in enumerate(agents.values()):
        us = first - (len(agents) - number) * 1000
        joined = {
            "type": "member_joined_channel",
            "user": user_id_for(nick),
            "channel": CHANNEL,
            "channel_type": "C",
            "team": TEAM,
            "event_ts": _slack_ts(us),
        }
        lines.append(_trace_line(len(lines), us, joined))
    key_by_ts: dict[str, Key] = {}
    for record, us in zip(speeches, times, strict=True):
        ts = _slack_ts(us)
        key_by_ts[ts] = (record["file"], record["idx"])
        message: dict[str, Any] = {
            "type": "message",
            "channel": CHANNEL,
            "channel_type": "channel",
            "user": user_ids[record["author"] or ""],
            "text": to_slack_text(record["text"], record["addressee"], user_ids),
            "ts": ts,
            "team": TEAM,
        }
        if record["kind"] == "action":
            message["subtype"] = "me_message"
        lines.append(_trace_line(len(lines), us, message))
    return Conversion(lines=lines, key_by_ts=key_by_ts)
