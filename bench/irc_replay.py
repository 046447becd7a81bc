"""Benchmark: replay real IRC traffic through `c2a replay` and report throughput and attention.

The data is the IRC disentanglement corpus (real #ubuntu chat with human reply-to labels), read
from `../shared/data/irc-disentanglement/` beside the repository and never copied into it. Each
log line becomes a Slack `event_callback` body; the N most active people each get an agent
standing in their seat, and the report compares what the host delivered to each agent with what
the human in that seat really answered.

    python bench/irc_replay.py [DATA.jsonl.gz] [--agents 3] [--limit N] [--keep DIR]

This is a benchmark, not a test: it prints figures and asserts nothing about time. This module
owns the command line, the `c2a replay` subprocess and the report; the pure conversion of corpus
lines into a trace and a manifest lives in `irc_convert.py` beside it, unit-tested in
`tests/bench/test_irc_convert.py`.

Data attribution (CC-BY-4.0), kept by anything that ships a benchmark over this corpus:
Kummerfeld et al. 2019, ACL, doi:10.18653/v1/P19-1374; Gouravajhala et al. 2023, ALTA;
Elsner and Charniak 2010, Computational Linguistics 36(3).
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

# Run as a script (`python bench/irc_replay.py`), so its sibling is importable by name.
from irc_convert import (
    Conversion,
    IrcRecord,
    Key,
    build_manifest,
    choose_agents,
    is_speech,
    to_trace,
)

__all__ = [
    "ATTRIBUTION",
    "main",
]

ATTRIBUTION = (
    "Kummerfeld et al. 2019. A Large-Scale Corpus for Conversation Disentanglement. ACL. "
    "doi:10.18653/v1/P19-1374",
    "Gouravajhala et al. 2023. Chat Disentanglement: Data for New Domains and Methods for More "
    "Accurate Annotation. ALTA.",
    "(channel-two) Elsner and Charniak 2010. Disentangling Chat. Computational Linguistics 36(3).",
)

MODES = ("immediate", "buffered", "notify", "tool_mailbox", "digest", "silent")
POLICIES = ("must_respond", "may_respond", "ack_only", "must_not_respond")
DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / (
    "shared/data/irc-disentanglement/ubuntu-dev.jsonl.gz"
)


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
    floor: dict[str, Any]


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
    floor = _floor(trace)
    return Replay(_parse_stats(done.stderr), wall, peak, _read_out(out), floor), conversion


def _floor(trace: Path) -> dict[str, Any]:
    """The parse-and-append floor of the same trace, in a process of its own like the replay
    (`replay_floor.py`)."""
    script = Path(__file__).resolve().parent / "replay_floor.py"
    done = subprocess.run(
        [sys.executable, str(script), str(trace)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        tail = "\n".join(done.stderr.splitlines()[-20:])
        raise RuntimeError(f"the parse-and-append floor exited with {done.returncode}:\n{tail}")
    return _parse_stats(done.stdout)


def floor_line(replay: Replay) -> str:
    """The replay's rate beside the floor's, and their ratio against the target (half)."""
    rate, floor = replay.stats.get("eventsPerSecond"), replay.floor.get("eventsPerSecond")
    if not isinstance(rate, float) or not isinstance(floor, float) or not floor:
        return "- replay beside its parse-and-append floor: not measured"
    ratio = rate / floor
    met = "met" if ratio >= 0.5 else "missed"
    return (
        f"- replay beside its parse-and-append floor: {rate:,.0f} against {floor:,.0f} "
        f"events/s (batches of {replay.floor.get('batch')}), **{ratio:.2f}** of the floor "
        f"(target at least 0.5: {met})"
    )


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
        if isinstance(value, dict) and (
            isinstance(value.get("rpc"), dict) or isinstance(value.get("turn"), dict)
        ):
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
    model_turns: Counter[str]


def tally(out: Iterable[dict[str, Any]], key_by_ts: Mapping[str, Key]) -> Tally:
    """Count `chat/deliver` by mode and policy, and cancellations, for each agent."""
    counted = Tally(
        defaultdict(Counter), defaultdict(Counter), Counter(), defaultdict(set), Counter()
    )
    for item in out:
        agent = str(item.get("agent"))
        if "turn" in item:
            if item["turn"].get("mode") in ("buffered", "immediate"):
                counted.model_turns[agent] += 1
            continue
        rpc = item["rpc"]
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
    replied = {k for k in parents if k in by_key and is_speech(by_key[k])}
    replied = {k for k in replied if by_key[k]["author"] != nick}
    scope = {(r["file"], r["idx"]) for r in speeches if r["annotated"] and r["author"] != nick}
    gold, predicted = replied & scope, counted.must_respond[agent] & scope
    hits = len(gold & predicted)
    return (
        f"| {agent} | {turns} | {baseline} | {_ratio(turns, baseline)} | {len(replied)} | "
        f"{_ratio(len(replied), baseline)} | {_ratio(hits, len(predicted))} "
        f"({hits}/{len(predicted)}) | {_ratio(hits, len(gold))} ({hits}/{len(gold)}) |"
    )


TURNS_NOTE = " ".join(
    [
        "model turns = the turns the agent's harness would start once fragments are merged",
        "(the replay's turn records); turns = immediate + buffered deliveries;",
        "baseline = a bot answering every message not written by its seat;",
        "human = messages the seat's human replied to (reply_to parents of their annotated",
        "lines, not counting their own or system lines); precision and recall of",
        "must_respond against those replies, over annotated non-system lines.",
    ]
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
        floor_line(replay),
        "",
        "## Deliveries by injection mode and policy",
        "",
        "| agent | seat | " + " | ".join(MODES + POLICIES) + " | cancelled | model turns |",
        "|---|---|" + "---:|" * (len(MODES) + len(POLICIES) + 2),
    ]
    for agent, nick in agents.items():
        cells = [counted.modes[agent][m] for m in MODES]
        cells += [counted.policies[agent][p] for p in POLICIES] + [counted.cancelled[agent]]
        cells.append(counted.model_turns[agent])
        out.append(f"| {agent} | {nick} | " + " | ".join(map(str, cells)) + " |")
    out += [
        "",
        "## Turns against the baseline and the human in the seat",
        "",
        TURNS_NOTE,
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
