"""`c2a replay`: recorded platform payloads through the live normalisers and engine, offline.

Input is JSON Lines of `{"at", "platform", "payload", "via"?}`; output is JSON Lines of
`{"agent": ..., "rpc" | "outbound" | "escalation": ...}` (docs/replay.md). The clock is virtual
(set to each record's `at`), so the same trace always gives the same output.

A bad line never stops a replay: one that is not UTF-8, not JSON, not a trace record, with an
`at` outside the years 1970-2999, or a payload its normaliser cannot read (for whatever reason)
is reported as `<source>:<line>: <reason>`, quarantined, and the replay goes on.
"""

from __future__ import annotations

import codecs
import gc
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TextIO

import orjson

from adapters.limits import is_plausible, quoted
from c2a.host import failure_reason, quarantine_text
from c2a.platforms import installed, normalisers
from c2a.records import Record, record_of
from core.clock import VirtualClock, format_time, parse_time
from core.emission import Emission
from core.engine import Engine
from core.errors import TraceError
from core.manifest import Workspace
from core.redact import Redactor
from core.store import Store
from harness_bridge.prompt import render_turn
from harness_bridge.turns import Assembler, Turn
from harness_bridge.wire import METHOD_CANCELLED, METHOD_DELIVER, METHOD_TYPING, parse_deliver

__all__ = ["NORMALISERS", "ReplayStats", "TraceRecord", "parse_record", "replay"]


@dataclass(slots=True)
class TraceRecord:
    """One trace line: when the host received which platform's payload, through which agent."""

    at: Final[datetime]
    platform: Final[str]
    payload: Final[Mapping[str, Any]]
    via: Final[str | None]


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


# The installed platforms' normalisers by name: what a trace line's `platform` may name.
NORMALISERS = normalisers(installed())

# Characters of a bad line kept in the quarantine, and how much of it is read to redact them.
_KEPT: Final = 65536
_READ_FOR_QUARANTINE: Final = 4 * _KEPT


def parse_record(line: str | bytes) -> TraceRecord:
    """Read one trace line, as text or as the file's bytes (which must be UTF-8); raises
    TraceError saying in one short line what is wrong with it."""
    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise TraceError(_not_json(line, exc)) from None
    if not isinstance(raw, dict):
        raise TraceError("a trace line must be a JSON object")
    platform = raw.get("platform")
    if not isinstance(platform, str) or platform not in NORMALISERS:
        known = ", ".join(sorted(NORMALISERS))
        shown = quoted(platform) if isinstance(platform, str) else _kind_of(platform)
        raise TraceError(f"platform must be one of {known}, not {shown}")
    payload = raw.get("payload")
    if not isinstance(payload, dict):
        raise TraceError("payload must be a JSON object")
    at = raw.get("at")
    if not isinstance(at, str):
        raise TraceError("at must be an RFC 3339 time string")
    try:
        moment = parse_time(at)
    except ValueError:
        raise TraceError(f"at is not an RFC 3339 time with a timezone: {quoted(at)}") from None
    except OverflowError:  # a time within a day of the year 1 or 9999, moved to UTC
        moment = None
    if moment is None or not is_plausible(moment):
        raise TraceError(f"at is not a time in years 1970-2999: {quoted(at)}")
    via = raw.get("via")
    if via is not None and not isinstance(via, str):
        raise TraceError("via must be an agent id")
    return TraceRecord(moment, platform, payload, via)


def _not_json(line: str | bytes, exc: orjson.JSONDecodeError) -> str:
    """Why a line did not parse: its first byte that is not UTF-8, else where the JSON broke."""
    if isinstance(line, bytes):
        try:
            line.decode()
        except UnicodeDecodeError as bad:
            return f"not UTF-8: byte {line[bad.start]:#04x} at column {bad.start + 1}"
    return f"not JSON ({exc.msg} at column {exc.colno})"


def _kind_of(value: object) -> str:
    """What a value of the wrong kind is, without quoting it: `null`, `a list`, `an int`."""
    if value is None:
        return "null"
    name = type(value).__name__
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


async def replay(
    workspace: Workspace,
    lines: Iterable[str | bytes],
    store: Store,
    out: TextIO,
    report: TextIO,
    *,
    source: str = "<trace>",
    compact: bool = False,
    batch: int = 500,
    render: Callable[[Record], str] | None = None,
) -> ReplayStats:
    """Replay trace lines into `store`, writing emissions to `out` after each commit and one
    line per rejected trace line to `report` (`<source>:<line>: <reason>`).

    `lines` are text, or the trace file's own bytes: each line is then decoded on its own, so
    one that is not UTF-8 is reported and the lines around it still replay."""
    stats = ReplayStats()
    clock = VirtualClock()
    redactor = Redactor.for_manifest(workspace.manifest, os.environ, workspace.secrets)
    engine = Engine(workspace, store, clock, redactor=redactor)
    turns = TurnRecorder(workspace.agent_ids, clock, compact=compact)
    started = time.perf_counter()
    await store.open()
    try:
        with _collecting_seldom():
            await engine.rebuild()
            pending = Pending(render)
            chunk: list[tuple[int, str | bytes]] = []
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                chunk.append((number, line))
                if len(chunk) >= batch:
                    await _run_chunk(engine, turns, chunk, stats, pending, report, source)
                    pending.write(out)
                    chunk.clear()
            if chunk:
                await _run_chunk(engine, turns, chunk, stats, pending, report, source)
            pending.add(turns.flush())
            pending.write(out)
            out.flush()
    finally:
        await store.close()
    stats.seconds = time.perf_counter() - started
    return stats


@contextmanager
def _collecting_seldom() -> Iterator[None]:
    """Python's collector looks through its young objects every 700 new ones, and now and then
    through all of them; a replay mostly adds to what it keeps (the engine's memory of every
    message), so at that pace it walks the same growing state again and again. The replay
    raises the first threshold while it runs, and puts it back."""
    thresholds = gc.get_threshold()
    gc.set_threshold(10_000, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


async def _run_chunk(
    engine: Engine,
    turns: TurnRecorder,
    chunk: list[tuple[int, str | bytes]],
    stats: ReplayStats,
    pending: Pending,
    report: TextIO,
    source: str,
) -> None:
    """One transaction: every line of the chunk is durable before any of its output is sent."""
    async with engine.transaction():
        for number, line in chunk:
            stats.lines += 1
            try:
                record = parse_record(line)
            except TraceError as exc:
                await _reject(engine, stats, report, f"{source}:{number}", str(exc), line)
                continue
            turns.clock.set(record.at)
            if due := turns.due():
                pending.add(due)
            if record.via is not None and record.via not in engine.workspace.manifest.agents:
                reason = f"via names unknown agent {quoted(record.via)}"
                await _reject(engine, stats, report, f"{source}:{number}", reason, line)
                continue
            try:
                event = NORMALISERS[record.platform](record.payload)
            except Exception as exc:  # whatever a normaliser raises, this line alone is lost
                payload = quarantine_text(record.payload, engine.redactor)
                reason = failure_reason(exc)
                await _reject(engine, stats, report, f"{source}:{number}", reason, payload)
                continue
            if event is None:
                stats.ignored += 1
                continue
            outcome = await engine.ingest(event, record.via)
            pending.add(turns.feed(outcome.emissions))
            if outcome.status == "new":
                stats.events += 1
            elif outcome.status == "repeat":
                stats.duplicates += 1


class Pending:
    """The output of a transaction not yet committed, encoded as it is made: JSON Lines, or
    what `render` makes of each record. Encoded at once, a chunk's many records do not
    stay alive as objects for the garbage collector to walk again and again."""

    def __init__(self, render: Callable[[Record], str] | None) -> None:
        self._render = render
        self._lines: list[bytes] = []
        self._text: list[str] = []

    def add(self, records: list[Record]) -> None:
        if self._render is not None:
            self._text.extend(map(self._render, records))
        else:
            self._lines.extend(map(_json_line, records))

    def write(self, out: TextIO) -> None:
        """Write everything added since the last write (the transaction has committed).

        JSON Lines go to a UTF-8 file's own byte buffer as orjson wrote them: decoding them
        and encoding them again would cost more than making them did."""
        if self._lines:
            data = b"".join(self._lines)
            self._lines.clear()
            binary = getattr(out, "buffer", None)
            if binary is not None and codecs.lookup(out.encoding).name == "utf-8":
                out.flush()  # what was written as text goes first
                binary.write(data)
            else:
                out.write(data.decode())
        if self._text:
            out.write("".join(self._text))
            self._text.clear()


def _json_line(record: Record) -> bytes:
    return orjson.dumps(
        {"agent": record.agent, record.kind: record.body}, option=orjson.OPT_APPEND_NEWLINE
    )


class TurnRecorder:
    """Runs every agent's turn assembly over what the host sends it, as its harness would,
    and reports each model turn with its exact prompt (the standing rules open an agent's
    first turn)."""

    def __init__(
        self, agents: Sequence[str], clock: VirtualClock, *, compact: bool = False
    ) -> None:
        self.clock = clock
        self.compact = compact
        self._assemblers = {agent: Assembler(clock) for agent in agents}
        self._started: set[str] = set()
        # No gathering closes before this (None: none is open), so a line that comes earlier
        # has nothing due. A `buffered` delivery opens a gathering, and a cancellation may make
        # one close sooner (a question's unfinished tail deleted: the settle time, not the
        # compose window); typing, more fragments and closing only make them close later.
        self._earliest: datetime | None = None

    def feed(self, emissions: list[Emission]) -> list[Record]:
        """The emissions' records, each followed by the turns it starts."""
        out: list[Record] = []
        for emission in emissions:
            record = record_of(emission, compact=self.compact)
            out.append(record)
            if record.kind != "rpc":
                continue
            assembler = self._assemblers[record.agent]
            method, params = record.body["method"], record.body["params"]
            if method == METHOD_DELIVER:
                if started := assembler.deliver(params):
                    out.extend(self._records(record.agent, started))
                if params["injection"]["mode"] == "buffered":
                    self._earliest = _earliest(self._earliest, assembler.next_due())
            elif method == METHOD_CANCELLED:
                assembler.cancel(params["eventId"], str(params.get("reason", "")))
                self._earliest = _earliest(self._earliest, assembler.next_due())
            elif method == METHOD_TYPING:
                assembler.typing(params["conversation"], params["authorId"], params["until"])
        return out

    def due(self) -> list[Record]:
        if self._earliest is None or self._earliest > self.clock.now():
            return []  # the cheap check on every line
        return self._each(Assembler.due)

    def flush(self) -> list[Record]:
        return self._each(Assembler.flush)

    def _each(self, close: Callable[[Assembler], list[Turn]]) -> list[Record]:
        records = [
            record
            for agent, assembler in self._assemblers.items()
            for record in self._records(agent, close(assembler))
        ]
        self._earliest = None
        for assembler in self._assemblers.values():
            self._earliest = _earliest(self._earliest, assembler.next_due())
        return records

    def _records(self, agent: str, turns: list[Turn]) -> list[Record]:
        records = []
        for turn in turns:
            prompt = render_turn(
                [parse_deliver(p) for p in turn.events], with_rules=agent not in self._started
            )
            self._started.add(agent)
            records.append(Record(agent, "turn", {**turn.record(), "prompt": prompt}))
        return records


def _earliest(one: datetime | None, other: datetime | None) -> datetime | None:
    if one is None or other is None:
        return other if one is None else one
    return min(one, other)


async def _reject(
    engine: Engine,
    stats: ReplayStats,
    report: TextIO,
    where: str,
    reason: str,
    payload: str | bytes,
) -> None:
    """A bad line is reported and quarantined with its reason, both redacted (the line is cut
    after it is redacted, so no secret is cut in two and half kept); the replay goes on. A line
    read as bytes is stored decoded, any byte that is not UTF-8 replaced."""
    stats.errors += 1
    reason = engine.redactor.text(reason)
    report.write(f"{where}: {reason}\n")
    at = format_time(engine.clock.now())
    # Redacted before it is cut to what is kept, so no secret is cut in two and half kept.
    text = payload[:_READ_FOR_QUARANTINE]
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    await engine.store.quarantine(where, reason, engine.redactor.text(text)[:_KEPT], at)
