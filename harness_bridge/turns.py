"""Turn assembly: when delivered events become model turns, on the core's clock.

- `buffered`: one person's fragments in one conversation gather into one turn, injected once
  they stop typing (when the platform says) and have been quiet for the compose window (3 s by
  default, 2-5 s is sensible), and at the latest 30 s after the first fragment. When the latest
  fragment is complete (`is_complete`: it ends with `?`, or it mentions someone and is a full
  sentence), the window is only the settle time (300 ms by default): a single question is
  not held three seconds, yet a fragment sent right after it still joins it.
- An edit that arrives before injection replaces the version it supersedes in its place (the
  model sees only the edited text, once), whichever of the edit and the old version's
  cancellation (`superseded`) comes first; an edit whose own mode starts no turn, or starts one
  at once, takes the old version out of its gathering instead. A fragment deleted or cancelled
  before injection is dropped, and a turn left empty never happens.
- `immediate` is a turn at once; it asks to interrupt the running turn when it is urgent or
  stops work (`preempts`), else it waits for the next tool boundary.
- `notify` is a turn at once holding only the knock; the host's periodic digest summary is a
  turn at once; `tool_mailbox`, `silent` and the single events folded into a digest start
  no turn.

The assembler is pure state plus a clock: the caller feeds it deliveries, typing and
cancellations, and calls `due()` whenever `next_due()` passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from core.clock import Clock, format_time, parse_time

__all__ = ["Assembler", "Turn", "is_complete", "preempts", "starts_turn"]

_PREEMPTING_REASONS = frozenset({"stop", "urgent"})
_TURN_MODES = frozenset({"buffered", "immediate", "notify"})
_SENTENCE_WORDS = 3
TYPING_HELD = 256  # typing holds kept before those that have passed are forgotten


def is_complete(params: dict[str, Any]) -> bool:
    """Whether a fragment (full or compact form) reads as a whole message, so nothing more need
    be waited for: its text ends with `?`, or it mentions someone and is a full sentence (at
    least three words besides the mentions, ending with `.` or `!`)."""
    content = params.get("content")
    # The full form's text parts, or the compact form's one string.
    parts = content if isinstance(content, list) else [{"text": content or ""}]
    text = " ".join(str(part.get("text", "")) for part in parts if isinstance(part, dict)).strip()
    if text.endswith("?"):
        return True
    target = params.get("target")
    mentions = target.get("mentions") if isinstance(target, dict) else None
    if not mentions or not text.endswith((".", "!")):
        return False
    words = [word for word in text.split() if not word.startswith(("@", "<"))]
    return len(words) >= _SENTENCE_WORDS


def starts_turn(params: dict[str, Any]) -> bool:
    """Whether a delivery is a model turn's business: `buffered`, `immediate`, `notify` and the
    digest summary are; `tool_mailbox`, `silent` and the single events folded into a digest are
    not, so they are never shown to a model, not even to a turn already running."""
    mode = params["injection"]["mode"]
    return mode in _TURN_MODES or (mode == "digest" and params["attention"]["reason"] == "digest")


def preempts(params: dict[str, Any]) -> bool:
    """Whether a delivery asks to interrupt the turn running in its conversation: an
    `immediate` one that is urgent or stops work (spec 000: no hard interrupt otherwise)."""
    if params["injection"]["mode"] != "immediate":
        return False
    attention = params["attention"]
    return attention.get("priority") == "urgent" or attention["reason"] in _PREEMPTING_REASONS


@dataclass(frozen=True, slots=True)
class Turn:
    """A model turn to start: the events it injects (in order), its mode, and whether it
    should interrupt a turn already running."""

    at: datetime
    mode: str
    events: tuple[dict[str, Any], ...]
    preempt: bool = False

    @property
    def event_ids(self) -> list[str]:
        return [e["eventId"] for e in self.events]

    def record(self) -> dict[str, Any]:
        return {"at": format_time(self.at), "eventIds": self.event_ids, "mode": self.mode}


@dataclass(slots=True)
class _Gathering:
    """One person's fragments in one place. `vacant` names those cancelled as superseded:
    each keeps its place for the edit that replaces it, and is never injected itself."""

    first: datetime
    last: datetime
    events: list[dict[str, Any]] = field(default_factory=list)
    vacant: set[str] = field(default_factory=set)

    def live(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["eventId"] not in self.vacant]


class Assembler:
    """Gathers one agent's deliveries into turns."""

    def __init__(
        self,
        clock: Clock,
        *,
        quiet_ms: int = 3000,
        merge_ms: int = 30_000,
        settle_ms: int = 300,
    ) -> None:
        self.clock = clock
        self.quiet = timedelta(milliseconds=quiet_ms)
        self.settle = timedelta(milliseconds=min(settle_ms, quiet_ms))
        self.merge = timedelta(milliseconds=merge_ms)
        self._gatherings: dict[tuple[str, str, str], _Gathering] = {}
        self._typing: dict[tuple[str, str], datetime] = {}

    # ---- input -------------------------------------------------------------------------------

    def deliver(self, params: dict[str, Any]) -> list[Turn]:
        """Take one `chat/deliver`'s params; returns the turns to start right now."""
        mode = params["injection"]["mode"]
        if not starts_turn(params) and "supersedes" not in params:
            return self.due() if self._gatherings else []
        turns = self.due()  # whatever closed before this event arrived goes first
        now = self.clock.now()
        superseded = params.get("supersedes")
        if superseded is not None:
            if mode == "buffered" and self._replace(superseded, params):
                return turns
            self._remove(superseded)  # the edit's own mode decides what it starts
        if mode == "buffered":
            key = _key(params)
            # A message sent ends its author's typing indicator: the quiet window starts now.
            self._typing.pop((key[0], key[1]), None)
            gathering = self._gatherings.get(key)
            if gathering is None:
                self._gatherings[key] = _Gathering(now, now, [params])
            else:
                gathering.events.append(params)
                gathering.last = now
        elif mode == "immediate":
            turns.append(Turn(now, mode, (params,), preempts(params)))
        elif starts_turn(params):  # a knock, or the digest summary
            turns.append(Turn(now, mode, (params,)))
        return turns

    def gathering(self, params: dict[str, Any]) -> bool:
        """Whether this event's author has fragments gathering where it was said: then it
        belongs with them, not in another person's running turn."""
        return _key(params) in self._gatherings

    def typing(self, conversation: dict[str, Any], author_id: str, until: str) -> None:
        """`notifications/typing`: hold that person's gathering until `until`. Holds that have
        passed are forgotten as more come (`TYPING_HELD`), so typers who never post leave none."""
        if len(self._typing) >= TYPING_HELD:
            now = self.clock.now()
            self._typing = {key: ends for key, ends in self._typing.items() if ends > now}
        self._typing[_place(conversation), author_id] = parse_time(until)

    def cancel(self, event_id: str, reason: str = "") -> bool:
        """`notifications/cancelled`: drop a fragment not yet injected; True if one was. One
        `superseded` keeps its place, empty, for the edit that replaces it."""
        for gathering in self._gatherings.values():
            if event_id in gathering.vacant:
                return False
            if reason == "superseded" and any(e["eventId"] == event_id for e in gathering.events):
                gathering.vacant.add(event_id)
                return True
        return self._remove(event_id)

    # ---- output ------------------------------------------------------------------------------

    def due(self) -> list[Turn]:
        """Every gathering whose compose window has closed, as turns in the order they closed;
        a turn's `at` is when its window closed, which may be before now."""
        if not self._gatherings:
            return []
        now = self.clock.now()
        return self._close(lambda closes: closes <= now)

    def flush(self) -> list[Turn]:
        """Close every gathering as if its window had passed (the end of a replay)."""
        return self._close(lambda closes: True)

    def next_due(self) -> datetime | None:
        """When the earliest open gathering closes, if any is open."""
        closes = [self._closes(key, g) for key, g in self._gatherings.items()]
        return min(closes) if closes else None

    # ---- inside ------------------------------------------------------------------------------

    def _close(self, closing: Callable[[datetime], bool]) -> list[Turn]:
        """The gatherings `closing` accepts, closed, as turns; one whose every fragment was
        superseded by an edit that never came closes as none."""
        ready = sorted(
            (closes, gathering.first, key)
            for key, gathering in self._gatherings.items()
            if closing(closes := self._closes(key, gathering))
        )
        closed = [(closes, self._gatherings.pop(key).live()) for closes, _, key in ready]
        return [Turn(closes, "buffered", tuple(events)) for closes, events in closed if events]

    def _closes(self, key: tuple[str, str, str], gathering: _Gathering) -> datetime:
        last = gathering.events[-1]  # superseded, it waits the whole window for its edit
        done = last["eventId"] not in gathering.vacant and is_complete(last)
        window = self.settle if done else self.quiet
        quiet = max(gathering.last + window, self._typing.get((key[0], key[1]), gathering.last))
        return min(quiet, gathering.first + self.merge)

    def _replace(self, superseded: str, params: dict[str, Any]) -> bool:
        """An edit of a fragment still gathering takes its place; False if it was injected."""
        for gathering in self._gatherings.values():
            for index, event in enumerate(gathering.events):
                if event["eventId"] == superseded:
                    gathering.events[index] = params
                    gathering.vacant.discard(superseded)
                    return True
        return False

    def _remove(self, event_id: str) -> bool:
        """Take a fragment out of its gathering, which ends when nothing is left in it; True
        if one was there and not superseded already."""
        for key, gathering in list(self._gatherings.items()):
            kept = [e for e in gathering.events if e["eventId"] != event_id]
            if len(kept) != len(gathering.events):
                live = event_id not in gathering.vacant
                gathering.vacant.discard(event_id)
                if kept:
                    gathering.events = kept
                else:
                    del self._gatherings[key]
                return live
        return False


def _place(conversation: dict[str, Any]) -> str:
    thread = conversation.get("threadId")
    return f"{conversation['id']}/{thread}" if thread else str(conversation["id"])


def _key(params: dict[str, Any]) -> tuple[str, str, str]:
    place = _place(params["conversation"])
    return place, params["author"]["id"], params["conversation"]["kind"]
