"""The cue a line gives the learned scorer (`core.scorer`), and what it reads.

`core.continuity` finds which agents a person's unnamed channel line is likely for. A question
to the room, or a line that states something while no agent has any other cue for it, is left
to the scorer: a `Cue` with reason `ROOM_QUESTION` or `ROOM_STATEMENT` (`SCORED`), carrying what
the engine knows of the channel and the agent when the line arrives (`Seen.room_cue`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from core.continuity import Talk
    from core.events import ChatEvent

__all__ = ["ROOM_QUESTION", "ROOM_STATEMENT", "SCORED", "Cue", "Seen", "decayed"]

ROOM_QUESTION = "room_question"
ROOM_STATEMENT = "room_statement"
# The cues the learned scorer decides; continuity's own rules decide the rest.
SCORED: Final = frozenset({ROOM_QUESTION, ROOM_STATEMENT})
# Each channel line keeps this share of an agent's activity and room answers: half in 23 lines.
_DECAY = 0.97


@dataclass(slots=True)
class Cue:
    """Why an unnamed line is likely for one agent, with what the rules and the scorer read."""

    reason: Final[str]  # a rule's (`core.continuity`) or one of `SCORED`
    lines_since: Final[int]  # lines since the exchange (or the agent's line to the room)
    seconds_since: Final[float]
    gap: Final[float]  # the channel's pace: mean seconds between lines
    in_burst: Final[bool]  # the line continues its author's burst
    burst_turned: Final[bool]  # that burst already gave this agent a turn
    agent_spoke_last: Final[bool]  # the line right before this one was this agent's
    # What the scorer reads of a line it decides (`SCORED`) besides the above:
    asks: Final[bool] = False  # the line is a question to the room (ROOM_QUESTION)
    exchanged: Final[int] = -1  # lines since any exchange of this agent and the author, or -1
    agent_lines_since: Final[int] = -1  # lines since the agent's last line, or -1
    activity: Final[float] = 0.0  # the agent's recent lines, decayed
    taken_up: Final[float] = 0.0  # questions to the room the agent took up recently, decayed
    author_lines: Final[int] = 0  # lines since the author's first line here
    other_partner: Final[bool] = False  # the author is in a live exchange with another agent
    length: Final[int] = 0  # characters of the line


def decayed(count: tuple[float, int] | None, line: int) -> float:
    """A decayed count (value, the line it was last changed at) as it stands at `line`."""
    if count is None:
        return 0.0
    value, at = count
    return value * _DECAY ** (line - at)


@dataclass(frozen=True, slots=True)
class Seen:
    """A line being judged, with what every agent's cue for it shares."""

    talk: Talk
    event: ChatEvent
    now: float
    in_burst: bool
    turned: set[str]
    spoke_last: str | None  # who wrote the line before

    def room_cue(self, agent: str, reason: str) -> Cue:
        """The scorer's cue (`SCORED`) of the line for `agent`, with what the scorer reads."""
        talk, author, line = self.talk, self.event.author.id, self.talk.line
        exchange = talk.exchanges.get((agent, author))
        spoke = talk.spoke.get(agent, -1)
        return Cue(
            reason=reason,
            lines_since=line,
            seconds_since=0.0,
            gap=talk.gap,
            in_burst=self.in_burst,
            burst_turned=agent in self.turned,
            agent_spoke_last=self.spoke_last == agent,
            asks=reason == ROOM_QUESTION,
            exchanged=line - exchange.line if exchange is not None else -1,
            agent_lines_since=line - spoke if spoke >= 0 else -1,
            activity=decayed(talk.activity.get(agent), line),
            taken_up=decayed(talk.taken_up.get(agent), line),
            author_lines=line - talk.first.get(author, line),
            length=len(self.event.text),
        )
