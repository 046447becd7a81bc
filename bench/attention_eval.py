"""Evaluation: would c2a have started a turn for the messages people in the seats answered?

    python bench/attention_eval.py [--data DIR] [--splits ubuntu-dev,...] [--curve] [--why-must]
        [--limit N] [--budget N] [--questions scored|select]

Each split of the IRC disentanglement corpus (read in place from `DIR`, by default
`../shared/data/irc-disentanglement/` beside the repository, never copied) is replayed through
the engine in process, with the three most active people seated as agents (their nicks as the
agents' `names`). For each seat, over the annotated lines not written by it, it reports:

- coverage: the share of the lines the seat's human answered whose burst (the author's run of
  lines less than a minute apart, with no line of the seat between) got a full turn
  (`buffered`/`immediate`) for the agent;
- coverage with turns asked for the asker: the same, also counting a line whose answer came
  in a turn started, between the line and the answer, by another person's line naming the
  line's author (`!factoid | nick`, `seat: can you help nick?`). A factoid bot seated as an
  agent answers a person's question when someone else's command points it at them, and the
  annotators link its answer to the question, not to the command: the first measure cannot
  credit such a turn, this one does, so the two together say how much of a gap is that;
- turns: the model turns the agent's harness would start (turn assembly as `c2a replay` runs
  it) holding an annotated line, against the lines the human answered;
- must-respond precision and recall: of the bursts with a `must_respond` delivery, the share
  holding a line the human answered; of the answered lines, the share whose burst had one.

The band (`to_me_likely`) is decided by the shipped scorer (`core/scorer_weights.json`); the
rules alone are shown beside it. `--curve` adds coverage against turns for continuity's rules
by window (`Window.lines`; 0 turns continuity off), for the rules with questions to the room
given to a seat that spoke lately (`RoomRule`), and for the scorer by its threshold for questions
(statements held to the shipped one). `ubuntu-test` and `new-domains` are for a final figure
only: never tune on them. `--why-must` lists, per split
and seat, the `must_respond` bursts holding no line the human answered, each line with the
policy and reason it got, so the misses can be read.
This module owns the in-process replay and the scoring; `irc_convert.py` the conversion.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, cast

from irc_convert import (
    CHANNEL,
    IrcRecord,
    Key,
    build_manifest,
    choose_agents,
    is_speech,
    to_trace,
)
from irc_replay import load_records

from c2a.platforms import installed
from c2a.replay import NORMALISERS, TurnRecorder
from core.clock import VirtualClock, parse_time
from core.continuity import SCORED, Continuity, Cue, Window
from core.engine import Engine
from core.manifest import Workspace, parse_manifest
from core.scorer import Scorer, default_scorer
from core.sqlite_store import SQLiteStore

__all__ = ["Score", "evaluate", "main", "score_split"]

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared/data/irc-disentanglement"
TUNING = ("ubuntu-dev", "ubuntu-train", "channel-two")
FINAL = ("ubuntu-test", "new-domains")
CURVE = (0, 4, 8, 16)
ROOM_CURVE = (2, 5, 10, 20, 50)
THRESHOLD_CURVE = (0.04, 0.06, 0.08, 0.10, 0.12, 0.16, 0.20, 0.30)
BURST_S = 60.0
_TURN_MODES = frozenset({"buffered", "immediate"})


@dataclass(slots=True)
class Score:
    """One seat's counts (or their sum over seats)."""

    answered: int = 0
    covered: int = 0
    covered_for_asker: int = 0  # also covered by a turn another person asked for the asker
    turns: int = 0
    must_bursts: int = 0
    must_hits: int = 0
    must_recalled: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    # The `must_respond` bursts holding no answered line: the seat, then `author: text [why]`.
    must_missed: list[list[str]] = field(default_factory=list)

    def add(self, other: Score) -> None:
        self.answered += other.answered
        self.covered += other.covered
        self.covered_for_asker += other.covered_for_asker
        self.turns += other.turns
        self.must_bursts += other.must_bursts
        self.must_hits += other.must_hits
        self.must_recalled += other.must_recalled
        self.reasons.update(other.reasons)
        self.must_missed += other.must_missed

    def row(self, label: str) -> str:
        return (
            f"| {label} | {self.answered} | {_pct(self.covered, self.answered)} | "
            f"{_pct(self.covered + self.covered_for_asker, self.answered)} | {self.turns} | "
            f"{self.turns / self.answered if self.answered else 0:.2f}x | "
            f"{_pct(self.must_hits, self.must_bursts)} ({self.must_hits}/{self.must_bursts}) | "
            f"{_pct(self.must_recalled, self.answered)} |"
        )


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "n/a"


@dataclass(frozen=True, slots=True)
class Settings:
    """What the benchmark's manifest sets besides its defaults: `budget`, the turns one person
    may cause an agent an hour (None: the manifest's default); `questions`, the channel's rule
    for questions to the room nobody is likely to take (`channels.<id>.questions`)."""

    budget: int | None = None
    questions: Literal["scored", "select"] = "scored"


def workspace_for(agents: dict[str, str], settings: Settings = Settings()) -> Workspace:
    """The benchmark's manifest, each agent also answering to its seat's nick, with
    `settings`."""
    data = build_manifest(agents)
    for agent, nick in agents.items():
        data["agents"][agent]["names"] = [nick]
    if settings.budget is not None:
        data["budget"] = {"turns": settings.budget}
    if settings.questions != "scored":
        data["channels"] = {CHANNEL: {"questions": settings.questions}}
    platforms = installed()
    return Workspace.from_manifest(parse_manifest(data, "<irc>", platforms=platforms), platforms)


@dataclass(slots=True)
class Run:
    """What one in-process replay delivered: per agent, each line's mode, policy and reason,
    and the lines of each model turn."""

    deliveries: dict[str, dict[str, tuple[str, str, str]]]
    turns: dict[str, list[list[str]]]
    seconds: float
    events: int


RULES = "rules"  # the `scorer` argument for continuity's rules alone, no learned scorer


@dataclass(frozen=True, slots=True)
class RoomRule(Scorer):
    """A simple rule in the scorer's place: continuity's cues all get a turn, and a question to
    the room does when the seat spoke within `lines` lines (a statement never)."""

    lines: int = 10

    def likely(self, cue: Cue) -> bool:
        if cue.reason not in SCORED:
            return True
        return cue.asks and 0 <= cue.agent_lines_since <= self.lines


async def replay(
    workspace: Workspace,
    lines: Iterable[dict[str, Any]],
    window: Window,
    scorer: Scorer | str | None = None,
    continuity: Continuity | None = None,
) -> Run:
    """Run trace lines through the engine and the turn assembly, on a virtual clock, with
    `scorer` deciding the `to_me_likely` band (None: the shipped one; `RULES`: none) and
    `continuity` (a fresh one by default) following the conversation."""
    clock = VirtualClock()
    store = SQLiteStore(":memory:")
    engine = Engine(workspace, store, clock)
    recorder = TurnRecorder(workspace.agent_ids, clock)
    run = Run(defaultdict(dict), defaultdict(list), 0.0, 0)
    started = time.perf_counter()
    await store.open()
    try:
        await engine.rebuild()
        if continuity is not None:
            engine.state.continuity = continuity
        engine.state.continuity.window = window
        if scorer is not None:
            engine.state.scorer = None if scorer == RULES else cast(Scorer, scorer)
        async with store.transaction():
            for line in lines:
                clock.set(parse_time(line["at"]))
                emitted = recorder.due()
                event = NORMALISERS[line["platform"]](line["payload"])
                if event is None:
                    continue
                outcome = await engine.ingest(event, None)
                run.events += 1
                emitted += recorder.feed(outcome.emissions)
                _collect(run, emitted)
            _collect(run, recorder.flush())
    finally:
        await store.close()
    run.seconds = time.perf_counter() - started
    return run


def _collect(run: Run, emitted: Sequence[Any]) -> None:
    for emission in emitted:
        if emission.kind == "turn":
            if emission.body["mode"] in _TURN_MODES:
                ids = [i.rsplit(":", 1)[-1] for i in emission.body["eventIds"]]
                run.turns[emission.agent].append(ids)
        elif emission.kind == "rpc" and emission.body["method"] == "chat/deliver":
            params = emission.body["params"]
            ts = params["eventId"].rsplit(":", 1)[-1]
            run.deliveries[emission.agent][ts] = (
                params["injection"]["mode"],
                params["attention"]["policy"],
                params["attention"]["reason"],
            )


def bursts(records: Sequence[IrcRecord], times: dict[Key, datetime], seat: str) -> dict[Key, int]:
    """Each speech's burst number: an author's lines less than `BURST_S` apart, with no line
    of `seat` between them."""
    number: dict[Key, int] = {}
    current: dict[str, tuple[int, datetime]] = {}
    counter = 0
    for record in records:
        key = (record["file"], record["idx"])
        if not is_speech(record) or key not in times:
            continue
        author = record["author"] or ""
        if author == seat:
            current.clear()
            continue
        at = times[key]
        previous = current.get(author)
        if previous is None or (at - previous[1]).total_seconds() > BURST_S:
            counter += 1
            previous = (counter, at)
        current[author] = (previous[0], at)
        number[key] = previous[0]
    return number


def answered_lines(
    records: Sequence[IrcRecord], nick: str, ts_by_key: dict[Key, str]
) -> tuple[set[Key], set[Key]]:
    """The lines a seat is judged on (annotated speech by others), and those its human answered."""
    scope = {
        (r["file"], r["idx"])
        for r in records
        if r["annotated"] and is_speech(r) and r["author"] != nick
    } & ts_by_key.keys()
    gold = {
        (r["file"], p)
        for r in records
        if r["author"] == nick and r["annotated"] and r["kind"] != "system"
        for p in r["reply_to"] or ()
    } & scope
    return scope, gold


def asked_for_asker(
    records: Sequence[IrcRecord], answered: set[Key], turned: set[Key], seat: str
) -> set[Key]:
    """Those of the `answered` lines whose answer came in a turn another person asked for the
    asker: a line between the answered one and the seat's first answer to it, written by
    neither its author nor the seat, got a turn (`turned`) and names the author as a word."""
    by_key = {(r["file"], r["idx"]): r for r in records}
    first_answer: dict[Key, int] = {}
    for record in records:
        if record["author"] == seat:
            for parent in record["reply_to"] or ():
                key = (record["file"], parent)
                first_answer[key] = min(first_answer.get(key, record["idx"]), record["idx"])
    found = set()
    for key in answered:
        author = by_key[key]["author"] or ""
        named = re.compile(rf"(?<![\w-]){re.escape(author)}(?![\w-])", re.IGNORECASE)
        between = [(key[0], i) for i in range(key[1] + 1, first_answer[key])]
        if any(
            k in turned
            and by_key[k]["author"] not in (author, seat)
            and named.search(by_key[k]["text"] or "")
            for k in between
        ):
            found.add(key)
    return found


def score_seat(
    records: Sequence[IrcRecord],
    run: Run,
    agent: str,
    nick: str,
    ts_by_key: dict[Key, str],
) -> Score:
    """One seat's `Score` (see the module docstring)."""
    times = {k: datetime.fromtimestamp(float(ts)) for k, ts in ts_by_key.items()}
    burst_of = bursts(records, times, nick)
    scope, gold = answered_lines(records, nick, ts_by_key)
    delivered = run.deliveries.get(agent, {})
    turned_bursts, must_bursts = set(), set()
    score = Score()
    for key in scope:
        mode, policy, reason = delivered.get(ts_by_key[key], ("", "", ""))
        if mode in _TURN_MODES:
            turned_bursts.add(burst_of[key])
        if policy == "must_respond":
            must_bursts.add(burst_of[key])
        if key in gold:
            score.reasons[reason] += 1
    gold_bursts = {burst_of[k] for k in gold}
    score.answered = len(gold)
    score.covered = sum(1 for k in gold if burst_of[k] in turned_bursts)
    turned = {k for k in scope if delivered.get(ts_by_key[k], ("",))[0] in _TURN_MODES}
    uncovered = {k for k in gold if burst_of[k] not in turned_bursts}
    score.covered_for_asker = len(asked_for_asker(records, uncovered, turned, nick))
    score.must_bursts = len(must_bursts)
    score.must_hits = len(must_bursts & gold_bursts)
    score.must_recalled = sum(1 for k in gold if burst_of[k] in must_bursts)
    in_scope = {ts_by_key[k] for k in scope}
    score.turns = sum(1 for turn in run.turns.get(agent, []) if in_scope.intersection(turn))
    missed: dict[int, list[str]] = defaultdict(list)
    for record in records:  # in order, the lines of the bursts no answer followed
        key = (record["file"], record["idx"])
        if key in scope and burst_of[key] in must_bursts - gold_bursts:
            _, policy, reason = delivered.get(ts_by_key[key], ("", "", ""))
            missed[burst_of[key]].append(
                f"{record['author']}: {record['text']} [{policy} {reason}]"
            )
    score.must_missed = [[f"{agent} ({nick})", *lines] for lines in missed.values()]
    return score


@dataclass(slots=True)
class SplitScore:
    seats: dict[str, tuple[str, Score]]
    total: Score
    events_per_second: float


def score_split(
    records: list[IrcRecord],
    window: Window,
    seats: int = 3,
    scorer: Scorer | str | None = None,
    continuity: Continuity | None = None,
    settings: Settings = Settings(),
) -> SplitScore:
    """Replay one split with `seats` agents and score every seat (`replay` tells `scorer`)."""
    agents = choose_agents(records, seats)
    conversion = to_trace(records, agents)
    workspace = workspace_for(agents, settings)
    run = asyncio.run(replay(workspace, conversion.lines, window, scorer, continuity))
    ts_by_key = {key: ts for ts, key in conversion.key_by_ts.items()}
    total, per_seat = Score(), {}
    for agent, nick in agents.items():
        score = score_seat(records, run, agent, nick, ts_by_key)
        per_seat[agent] = (nick, score)
        total.add(score)
    return SplitScore(per_seat, total, run.events / run.seconds if run.seconds else 0.0)


HEADER = (
    "| seat | answered | coverage | with turns asked for the asker | model turns "
    "| turns / answered | must precision | must recall |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|"
)


def _point(label: str, total: Score) -> str:
    return (
        f"| {label} | {_pct(total.covered, total.answered)} | "
        f"{total.turns / total.answered if total.answered else 0:.2f}x | "
        f"{_pct(total.must_hits, total.must_bursts)} |"
    )


def curve_rows(records: list[IrcRecord], settings: Settings = Settings()) -> list[str]:
    """Coverage against turns: continuity's rules by window, the rules with questions to the
    room for a seat that spoke lately, and the shipped scorer by threshold."""
    out = ["| band decided by | coverage | turns / answered | must precision |"]
    out += ["|---|---:|---:|---:|"]
    for lines in CURVE:
        total = score_split(records, Window(lines=lines), scorer=RULES, settings=settings).total
        out.append(_point(f"rules, window {lines} lines", total))
    for lines in ROOM_CURVE:
        room = RoomRule((), 0.0, lines)
        total = score_split(records, Window(), scorer=room, settings=settings).total
        out.append(_point(f"rules + room questions, seat spoke within {lines} lines", total))
    shipped = default_scorer()
    for threshold in THRESHOLD_CURVE:
        scorer = Scorer(shipped.weights, threshold, shipped.statement_threshold)
        total = score_split(records, Window(), scorer=scorer, settings=settings).total
        out.append(_point(f"scorer, threshold {threshold:.2f} (statements as shipped)", total))
    return [*out, ""]


def evaluate(
    data: Path,
    splits: Sequence[str],
    curve: bool,
    limit: int | None,
    why_must: bool = False,
    settings: Settings = Settings(),
) -> str:
    """The markdown report for `splits`: the shipped scorer per seat, the rules alone beside it
    (and with `why_must`, the `must_respond` bursts no answer followed), on a manifest with
    `settings`."""
    out = ["# Attention against what people answered (IRC disentanglement corpus)", ""]
    for split in splits:
        path = data / f"{split}.jsonl.gz"
        records = load_records(path, limit)
        result = score_split(records, Window(), settings=settings)
        out += [f"## {split}", "", HEADER]
        for agent, (nick, score) in result.seats.items():
            out.append(score.row(f"{agent} ({nick})"))
        out.append(result.total.row("**all seats**"))
        rules = score_split(records, Window(), scorer=RULES, settings=settings)
        out.append(rules.total.row("all seats, continuity's rules alone"))
        reasons = ", ".join(f"{r or 'none'} {n}" for r, n in result.total.reasons.most_common())
        out += ["", f"Reasons of the answered lines: {reasons}.", ""]
        out += [f"Engine with turn assembly: {result.events_per_second:,.0f} events/s.", ""]
        if curve:
            out += curve_rows(records, settings)
        if why_must:
            out += ["### must_respond with no answered line", ""]
            out += [
                f"- {seat}: " + " / ".join(f"`{x}`" for x in lines)
                for seat, *lines in result.total.must_missed
            ] + [""]
    out += ["Data: IRC disentanglement corpus, CC-BY-4.0 (Kummerfeld et al. 2019, ACL,"]
    out += ["doi:10.18653/v1/P19-1374; Gouravajhala et al. 2023, ALTA; Elsner and Charniak 2010)."]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the evaluation; return the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the corpus folder")
    parser.add_argument(
        "--splits", default="ubuntu-dev,channel-two", help="comma-separated split names"
    )
    parser.add_argument("--curve", action="store_true", help="coverage against turns by window")
    parser.add_argument(
        "--why-must", action="store_true", help="list the must_respond bursts nobody answered"
    )
    parser.add_argument("--limit", type=int, default=None, help="read only the first N lines")
    parser.add_argument(
        "--budget",
        type=int,
        default=None,
        help="turns one person may cause an agent an hour (default: the manifest's, 30)",
    )
    parser.add_argument(
        "--questions",
        choices=("scored", "select"),
        default="scored",
        help="the channel's questions to the room nobody is likely to take (default: scored)",
    )
    args = parser.parse_args(argv)
    splits = [s for s in args.splits.split(",") if s]
    missing = [s for s in splits if not (args.data / f"{s}.jsonl.gz").is_file()]
    if missing:
        print(
            f"IRC data not found: no {', '.join(s + '.jsonl.gz' for s in missing)} in "
            f"{args.data.resolve()} (pass --data DIR)"
        )
        return 2
    settings = Settings(args.budget, args.questions)
    print(evaluate(args.data, splits, args.curve, args.limit, args.why_must, settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
