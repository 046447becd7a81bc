"""Benchmark: replay real IRC traffic through `c2a replay` and report throughput and attention.

The data is the IRC disentanglement corpus (real #ubuntu chat with human reply-to labels), read
from `../shared/data/irc-disentanglement/` beside the repository and never copied into it. Each
log line becomes a Slack `event_callback` body; the N most active people each get an agent
standing in their seat, and the report compares what the host delivered to each agent with what
the human in that seat really answered.

    python bench/irc_replay.py [DATA.jsonl.gz] [--agents 3] [--limit N] [--keep DIR]

This is a benchmark, not a test: it prints figures and asserts nothing about time. The pure
conversion functions (`choose_agents`, `user_id_for`, `to_slack_text`, `spread_times`,
`build_manifest`, `to_trace`) are unit-tested in `tests/bench/test_irc_convert.py`.

Data attribution (CC-BY-4.0), kept by anything that ships a benchmark over this corpus:
Kummerfeld et al. 2019, ACL, doi:10.18653/v1/P19-1374; Gouravajhala et al. 2023, ALTA;
Elsner and Charniak 2010, Computational Linguistics 36(3).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict, cast

import yaml

__all__ = [
    "ATTRIBUTION",
    "Conversion",
    "IrcRecord",
    "build_manifest",
    "choose_agents",
    "main",
    "spread_times",
    "to_slack_text",
    "to_trace",
    "user_id_for",
]

ATTRIBUTION = (
    "Kummerfeld et al. 2019. A Large-Scale Corpus for Conversation Disentanglement. ACL. "
    "doi:10.18653/v1/P19-1374",
    "Gouravajhala et al. 2023. Chat Disentanglement: Data for New Domains and Methods for More "
    "Accurate Annotation. ALTA.",
    "(channel-two) Elsner and Charniak 2010. Disentangling Chat. Computational Linguistics 36(3).",
)

TEAM = "T0IRC"
APP = "A0IRC"
CHANNEL = "C0UBUNTU"
SPEAKING_KINDS = ("message", "action")
MODES = ("immediate", "buffered", "notify", "tool_mailbox", "digest", "silent")
POLICIES = ("must_respond", "may_respond", "ack_only", "must_not_respond")
# channel-two has times without a date; any fixed day keeps them valid Slack timestamps.
DATELESS_DAY = "2000-01-01"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / (
    "shared/data/irc-disentanglement/ubuntu-dev.jsonl.gz"
)

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


def _speaks(record: IrcRecord) -> bool:
    return record["kind"] in SPEAKING_KINDS and record["author"] is not None


def choose_agents(records: Iterable[IrcRecord], n: int) -> dict[str, str]:
    """Return `{"agent-1": nick, ...}` for the n most active authors (ties broken by nick)."""
    counts = Counter(r["author"] for r in records if _speaks(r))
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
        if _speaks(record):
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


# --- running and reporting (I/O from here on) ---


def load_records(path: Path, limit: int | None) -> list[IrcRecord]:
    """Read the first `limit` records (all when None) of a gzipped JSONL corpus file."""
    records: list[IrcRecord] = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if limit is not None and len(records) >= limit:
                break
            records.append(cast(IrcRecord, json.loads(line)))
    return records


@dataclass(frozen=True, slots=True)
class Replay:
    """What one `c2a replay` run produced."""

    stats: dict[str, Any]
    wall_seconds: float
    peak_rss_kib: int
    out: list[dict[str, Any]]


def run_replay(
    c2a: Path, workdir: Path, records: list[IrcRecord], agents: dict[str, str]
) -> tuple[Replay, Conversion]:
    """Write manifest and trace into `workdir`, run `c2a replay` on them and collect the output.

    Raises `RuntimeError` with the tail of stderr when the command fails.
    """
    conversion = to_trace(records, agents)
    manifest, trace = workdir / "manifest.yaml", workdir / "trace.jsonl"
    out, ledger = workdir / "out.jsonl", workdir / "ledger.sqlite3"
    manifest.write_text(yaml.safe_dump(build_manifest(agents), sort_keys=False))
    trace.write_text("".join(json.dumps(line) + "\n" for line in conversion.lines))
    # A ledger left by an earlier run in --keep DIR would dedup every event of this one.
    for stale in (
        out,
        ledger,
        ledger.with_name(ledger.name + "-wal"),
        ledger.with_name(ledger.name + "-shm"),
    ):
        stale.unlink(missing_ok=True)
    command = [str(c2a), "replay", "--manifest", str(manifest), str(trace)]
    command += ["--out", str(out), "--store", str(ledger), "--stats"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if done.returncode != 0:
        tail = "\n".join(done.stderr.splitlines()[-20:])
        raise RuntimeError(f"c2a replay exited with {done.returncode}:\n{tail}")
    return Replay(_parse_stats(done.stderr), wall, peak, _read_out(out)), conversion


def _parse_stats(stderr: str) -> dict[str, Any]:
    for line in reversed(stderr.splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and "events" in value:
            return value
    return {}


def _read_out(path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    if not path.exists():
        return records
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("rpc"), dict):
            records.append(value)
    return records


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _ratio(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "n/a"


def _figure(value: Any) -> str:
    return f"{value:,.2f}" if isinstance(value, float) else str(value)


@dataclass(frozen=True, slots=True)
class Tally:
    """Deliveries per agent, counted from the replay output."""

    modes: dict[str, Counter[str]]
    policies: dict[str, Counter[str]]
    cancelled: Counter[str]
    must_respond: dict[str, set[Key]]


def tally(out: Iterable[dict[str, Any]], key_by_ts: Mapping[str, Key]) -> Tally:
    """Count `chat/deliver` by mode and policy, and cancellations, for each agent."""
    counted = Tally(defaultdict(Counter), defaultdict(Counter), Counter(), defaultdict(set))
    for item in out:
        agent, rpc = str(item.get("agent")), item["rpc"]
        if rpc.get("method") == "notifications/cancelled":
            counted.cancelled[agent] += 1
        if rpc.get("method") != "chat/deliver":
            continue
        counted.modes[agent][str(_dig(rpc, "params", "injection", "mode"))] += 1
        policy = str(_dig(rpc, "params", "attention", "policy"))
        counted.policies[agent][policy] += 1
        # eventId is slack:<team>:<channel>:<ts>
        key = key_by_ts.get(str(_dig(rpc, "params", "eventId")).rsplit(":", 1)[-1])
        if policy == "must_respond" and key is not None:
            counted.must_respond[agent].add(key)
    return counted


def _seat_row(
    agent: str, nick: str, records: list[IrcRecord], speeches: list[IrcRecord], counted: Tally
) -> str:
    by_key = {(r["file"], r["idx"]): r for r in records}
    turns = counted.modes[agent]["immediate"] + counted.modes[agent]["buffered"]
    baseline = sum(1 for r in speeches if r["author"] != nick)
    parents = {
        (r["file"], p)
        for r in records
        if r["author"] == nick and r["annotated"] and r["kind"] != "system"
        for p in r["reply_to"] or ()
    }
    replied = {k for k in parents if k in by_key and _speaks(by_key[k])}
    replied = {k for k in replied if by_key[k]["author"] != nick}
    scope = {(r["file"], r["idx"]) for r in speeches if r["annotated"] and r["author"] != nick}
    gold, predicted = replied & scope, counted.must_respond[agent] & scope
    hits = len(gold & predicted)
    return (
        f"| {agent} | {turns} | {baseline} | {_ratio(turns, baseline)} | {len(replied)} | "
        f"{_ratio(len(replied), baseline)} | {_ratio(hits, len(predicted))} "
        f"({hits}/{len(predicted)}) | {_ratio(hits, len(gold))} ({hits}/{len(gold)}) |"
    )


def render_report(
    data: Path,
    records: list[IrcRecord],
    agents: dict[str, str],
    conversion: Conversion,
    replay: Replay,
) -> str:
    """Return the markdown report of one run."""
    counted = tally(replay.out, conversion.key_by_ts)
    by_key = {(r["file"], r["idx"]): r for r in records}
    speeches = [by_key[key] for key in conversion.key_by_ts.values()]
    stats = ", ".join(f"{k} {_figure(v)}" for k, v in replay.stats.items()) or "not found"
    out = [
        "# IRC replay through `c2a replay`",
        "",
        f"- data: `{data}`",
        f"- records read: {len(records)}; trace lines: {len(conversion.lines)} "
        f"({len(speeches)} messages, {len(agents)} joins)",
        f"- **{_figure(replay.stats.get('eventsPerSecond'))} events/s** "
        f"(c2a replay --stats: {stats})",
        f"- wall time of the subprocess: {replay.wall_seconds:.2f} s; peak RSS of the child: "
        f"{replay.peak_rss_kib / 1024:.1f} MiB",
        "",
        "## Deliveries by injection mode and policy",
        "",
        "| agent | seat | " + " | ".join(MODES + POLICIES) + " | cancelled |",
        "|---|---|" + "---:|" * (len(MODES) + len(POLICIES) + 1),
    ]
    for agent, nick in agents.items():
        cells = [counted.modes[agent][m] for m in MODES]
        cells += [counted.policies[agent][p] for p in POLICIES] + [counted.cancelled[agent]]
        out.append(f"| {agent} | {nick} | " + " | ".join(map(str, cells)) + " |")
    out += [
        "",
        "## Turns against the baseline and the human in the seat",
        "",
        "turns = immediate + buffered deliveries; baseline = a bot answering every message not "
        "written by its seat; human = messages the seat's human replied to (reply_to parents "
        "of their annotated lines, not counting their own or system lines); precision and "
        "recall of must_respond against those replies, over annotated non-system lines.",
        "",
        "| agent | turns | baseline | turns/baseline | human replied to | human/baseline "
        "| must_respond precision | recall |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    out += [_seat_row(a, nick, records, speeches, counted) for a, nick in agents.items()]
    out += ["", "## Data", "", "IRC disentanglement corpus, CC-BY-4.0:", ""]
    out += [f"- {line}" for line in ATTRIBUTION]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; return the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA, help="corpus .jsonl.gz")
    parser.add_argument(
        "--agents", type=int, default=3, help="agents in the seats of the N most active people"
    )
    parser.add_argument("--limit", type=int, default=None, help="replay only the first N records")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="write manifest, trace, out and ledger into DIR (replacing them) and keep them",
    )
    args = parser.parse_args(argv)
    data: Path = args.data
    if not data.is_file():
        print(f"IRC data not found: looked for {data.resolve()}")
        return 2
    c2a = Path(sys.executable).parent / "c2a"
    if not c2a.is_file():
        print(f"c2a command not found: looked for {c2a} (install the project: pip install -e .)")
        return 2
    records = load_records(data, args.limit)
    agents = choose_agents(records, args.agents)
    try:
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            replay, conversion = run_replay(c2a, args.keep, records, agents)
        else:
            with tempfile.TemporaryDirectory(prefix="irc-replay-") as tmp:
                replay, conversion = run_replay(c2a, Path(tmp), records, agents)
    except RuntimeError as error:
        print(error)
        return 1
    print(render_report(data, records, agents, conversion, replay))
    return 0


if __name__ == "__main__":
    sys.exit(main())
