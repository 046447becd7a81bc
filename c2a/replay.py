"""`c2a replay`: recorded platform payloads through the live normalisers and engine, offline.

Input is JSON Lines of `{"at", "platform", "payload", "via"?}`; output is JSON Lines of
`{"agent": ..., "rpc" | "outbound" | "escalation": ...}` (docs/replay.md). The clock is virtual
(set to each record's `at`), so the same trace always gives the same output.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO

import orjson

from c2a.host import NORMALISERS, redact
from core.clock import VirtualClock, format_time, parse_time
from core.engine import Emission, Engine
from core.errors import C2AError, TraceError
from core.manifest import Workspace
from core.store import Store
from core.wire import METHOD_CANCELLED, METHOD_DELIVER, METHOD_TYPING, parse_deliver
from harness_bridge.prompt import render_turn
from harness_bridge.turns import Assembler, Turn

__all__ = ["NORMALISERS", "ReplayStats", "TraceRecord", "parse_record", "replay"]


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One trace line: when the host received which platform's payload, through which agent."""

    at: datetime
    platform: str
    payload: Mapping[str, Any]
    via: str | None


@dataclass(slots=True)
class ReplayStats:
    """What a replay did: input lines, new events, repeats, bad lines, ignored payloads."""

    lines: int = 0
    events: int = 0
    duplicates: int = 0
    errors: int = 0
    ignored: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        rate = self.lines / self.seconds if self.seconds else 0.0
        return {
            "lines": self.lines,
            "events": self.events,
            "duplicates": self.duplicates,
            "errors": self.errors,
            "ignored": self.ignored,
            "seconds": round(self.seconds, 3),
            "eventsPerSecond": round(rate, 1),
        }


def parse_record(line: str) -> TraceRecord:
    """Read one trace line; raises TraceError saying what is wrong with it."""
    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise TraceError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(raw, dict):
        raise TraceError("a trace line must be a JSON object")
    platform = raw.get("platform")
    if platform not in NORMALISERS:
        known = ", ".join(sorted(NORMALISERS))
        raise TraceError(f"platform must be one of {known}, not {platform!r}")
    payload = raw.get("payload")
    if not isinstance(payload, dict):
        raise TraceError("payload must be a JSON object")
    at = raw.get("at")
    if not isinstance(at, str):
        raise TraceError("at must be an RFC 3339 time string")
    try:
        moment = parse_time(at)
    except ValueError:
        raise TraceError(f"at is not an RFC 3339 time with a timezone: {at!r}") from None
    via = raw.get("via")
    if via is not None and not isinstance(via, str):
        raise TraceError("via must be an agent id")
    return TraceRecord(moment, platform, payload, via)


_SECRET_PATTERNS = (
    re.compile(r"xox[abeoprs]-[A-Za-z0-9-]+"),
    re.compile(r"xapp-[A-Za-z0-9-]+"),
    re.compile(r"[A-Za-z0-9_-]{23,28}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}"),
    re.compile(r'("(?:token|bot_token|app_token|authorization|signing_secret)"\s*:\s*)"[^"]*"'),
)


def redact_text(text: str) -> str:
    """Text with anything shaped like a Slack or Discord token blanked."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(
            lambda m: (
                (m.group(1) if m.groups() else "") + '"[redacted]"' if m.groups() else "[redacted]"
            ),
            text,
        )
    return text


async def replay(
    workspace: Workspace,
    lines: Iterable[str],
    store: Store,
    out: TextIO,
    report: TextIO,
    *,
    source: str = "<trace>",
    compact: bool = False,
    batch: int = 500,
    render: Callable[[Emission], str] | None = None,
) -> ReplayStats:
    """Replay trace lines into `store`, writing emissions to `out` after each commit and one
    line per rejected trace line to `report` (`<source>:<line>: <reason>`)."""
    stats = ReplayStats()
    clock = VirtualClock()
    engine = Engine(workspace, store, clock, compact=compact)
    turns = TurnRecorder(workspace.agent_ids, clock)
    started = time.perf_counter()
    await store.open()
    try:
        await engine.rebuild()
        write = render or _json_line
        pending: list[Emission] = []
        chunk: list[tuple[int, str]] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            chunk.append((number, line))
            if len(chunk) >= batch:
                await _run_chunk(engine, turns, chunk, stats, pending, report, source)
                out.writelines(write(e) for e in pending)
                pending.clear()
                chunk.clear()
        if chunk:
            await _run_chunk(engine, turns, chunk, stats, pending, report, source)
        pending.extend(turns.flush())
        out.writelines(write(e) for e in pending)
        out.flush()
    finally:
        await store.close()
    stats.seconds = time.perf_counter() - started
    return stats


async def _run_chunk(
    engine: Engine,
    turns: TurnRecorder,
    chunk: list[tuple[int, str]],
    stats: ReplayStats,
    pending: list[Emission],
    report: TextIO,
    source: str,
) -> None:
    """One transaction: every line of the chunk is durable before any of its output is sent."""
    async with engine.store.transaction():
        for number, line in chunk:
            stats.lines += 1
            try:
                record = parse_record(line)
            except TraceError as exc:
                await _reject(engine, stats, report, f"{source}:{number}", str(exc), line)
                continue
            turns.clock.set(record.at)
            pending.extend(turns.due())
            where = f"{source}:{number}"
            if record.via is not None and record.via not in engine.workspace.manifest.agents:
                await _reject(
                    engine, stats, report, where, f"via names unknown agent {record.via!r}", line
                )
                continue
            try:
                event = NORMALISERS[record.platform](record.payload)
            except C2AError as exc:
                payload = json.dumps(redact(record.payload), ensure_ascii=False)
                await _reject(engine, stats, report, where, str(exc), payload)
                continue
            if event is None:
                stats.ignored += 1
                continue
            outcome = await engine.ingest(event, record.via)
            pending.extend(turns.feed(outcome.emissions))
            if outcome.status == "new":
                stats.events += 1
            elif outcome.status == "repeat":
                stats.duplicates += 1


class TurnRecorder:
    """Runs every agent's turn assembly over what the host sends it, as its harness would,
    and reports each model turn with its exact prompt (the standing rules open an agent's
    first turn)."""

    def __init__(self, agents: Sequence[str], clock: VirtualClock) -> None:
        self.clock = clock
        self._assemblers = {agent: Assembler(clock) for agent in agents}
        self._started: set[str] = set()

    def feed(self, emissions: list[Emission]) -> list[Emission]:
        """The emissions, each followed by the turns it starts."""
        out: list[Emission] = []
        for emission in emissions:
            out.append(emission)
            if emission.kind != "rpc":
                continue
            assembler = self._assemblers[emission.agent]
            method, params = emission.body["method"], emission.body["params"]
            if method == METHOD_DELIVER:
                out.extend(self._records(emission.agent, assembler.deliver(params)))
            elif method == METHOD_CANCELLED:
                assembler.cancel(params["eventId"])
            elif method == METHOD_TYPING:
                assembler.typing(params["conversation"], params["authorId"], params["until"])
        return out

    def due(self) -> list[Emission]:
        return self._each(Assembler.due) if self._open() else []

    def _open(self) -> bool:
        """Whether any gathering could have closed by now (the cheap check on every line)."""
        now = self.clock.now()
        return any(
            (closes := a.next_due()) is not None and closes <= now
            for a in self._assemblers.values()
        )

    def flush(self) -> list[Emission]:
        return self._each(Assembler.flush)

    def _each(self, close: Callable[[Assembler], list[Turn]]) -> list[Emission]:
        return [
            record
            for agent, assembler in self._assemblers.items()
            for record in self._records(agent, close(assembler))
        ]

    def _records(self, agent: str, turns: list[Turn]) -> list[Emission]:
        records = []
        for turn in turns:
            prompt = render_turn(
                [parse_deliver(p) for p in turn.events], with_rules=agent not in self._started
            )
            self._started.add(agent)
            records.append(Emission(agent, "turn", {**turn.record(), "prompt": prompt}))
        return records


async def _reject(
    engine: Engine, stats: ReplayStats, report: TextIO, where: str, reason: str, payload: str
) -> None:
    """A bad line is reported and quarantined with its reason; the replay goes on."""
    stats.errors += 1
    report.write(f"{where}: {reason}\n")
    at = format_time(engine.clock.now())
    await engine.store.quarantine(where, reason, redact_text(payload[:65536]), at)


def _json_line(emission: Emission) -> str:
    return orjson.dumps({"agent": emission.agent, emission.kind: emission.body}).decode() + "\n"
