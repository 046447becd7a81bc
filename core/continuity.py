"""Conversation continuity in flat channels: who each agent is talking with, and how recently.

Most team chat names nobody: people answer the person they were just talking to. For each
channel conversation this module remembers, from the messages themselves, when each agent last
exchanged a line with each person (the agent named them, they named or DMed the agent, or the
agent spoke to the room right after), when each agent last spoke to the room, who each person
last named instead, and each person's current burst of lines. From that it tells the rules
which agents a new unnamed line is likely for (`Continuity.cues`): the `to_me_likely` band.

Windows adapt to the channel's pace: an exchange survives `Window.lines` lines of the channel,
and at most the time the channel takes for twice that many lines (never less than
`Window.min_seconds`), so a quiet channel waits longer in seconds and a busy one in lines. The
state changes only through `Continuity.note`, called once per message in ledger order, so
replaying the ledger rebuilds it (see `core.state`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from core.events import AuthorKind, ChatEvent, ConversationKind

__all__ = ["Continuity", "Cue", "Talk", "Window"]

_CHANNEL = ConversationKind.CHANNEL
_HUMAN = AuthorKind.HUMAN
# The first guess at a channel's pace before it has shown one: a line every 20 seconds.
_FIRST_GAP_S = 20.0
_PACE_WEIGHT = 0.1  # how much one new gap moves the running mean
_LONGEST_GAP_S = 600.0  # a night's silence counts as ten minutes in the mean

PARTNER = "conversation_partner"
ROOM = "answer_to_my_line"
NAMED = "named_in_text"


@dataclass(frozen=True, slots=True)
class Window:
    """How long an exchange lasts, and how far apart one person's lines stay one burst."""

    lines: int = 8
    room_lines: int = 2  # how long an agent's line to the room waits for answers
    min_seconds: float = 60.0
    burst_seconds: float = 60.0

    def alive(self, lines_since: int, seconds_since: float, gap: float, lines: int = -1) -> bool:
        """Whether an exchange `lines_since` lines and `seconds_since` seconds old, in a
        channel with a line every `gap` seconds on average, still holds (within `lines`
        lines, by default `self.lines`)."""
        lines = self.lines if lines < 0 else lines
        if lines_since > lines:
            return False
        return seconds_since <= max(self.min_seconds, 2 * lines * gap)


@dataclass(frozen=True, slots=True)
class Mark:
    """A line of the conversation: its number and time."""

    line: int
    at: datetime


@dataclass(slots=True)
class Burst:
    """One person's run of lines: when the last came, and the agents it already gave a turn."""

    last: Mark
    turned: set[str] = field(default_factory=set)


@dataclass(slots=True)
class Talk:
    """What continuity remembers of one conversation."""

    line: int = 0
    last_at: datetime | None = None
    gap: float = _FIRST_GAP_S
    agent_line: int = -1  # the last line an agent wrote
    exchanges: dict[tuple[str, str], Mark] = field(default_factory=dict)  # (agent, person)
    # agent -> the person it last spoke to by name, or who last spoke to it, and that line
    partner: dict[str, tuple[str, Mark]] = field(default_factory=dict)
    room: dict[str, Mark] = field(default_factory=dict)  # agent -> its last line to the room
    room_line: int = -1  # the last line any agent wrote to the room
    elsewhere: dict[str, int] = field(default_factory=dict)  # person -> line naming another
    bursts: dict[str, Burst] = field(default_factory=dict)  # person -> current burst


@dataclass(frozen=True, slots=True)
class Cue:
    """Why an unnamed line is likely for one agent, with what the rules and the scorer read."""

    reason: Final[str]  # PARTNER, ROOM or NAMED
    lines_since: Final[int]  # lines since the exchange (or the agent's line to the room)
    seconds_since: Final[float]
    gap: Final[float]  # the channel's pace: mean seconds between lines
    in_burst: Final[bool]  # the line continues its author's burst
    burst_turned: Final[bool]  # that burst already gave this agent a turn
    agent_spoke_last: Final[bool]  # the line right before this one was this agent's


@dataclass(slots=True)
class Continuity:
    """Every channel conversation's `Talk`, and the window they are judged by."""

    window: Window = field(default_factory=Window)
    talks: dict[str, Talk] = field(default_factory=dict)
    last_author: dict[str, str] = field(default_factory=dict)  # conversation -> author id

    def cues(
        self, event: ChatEvent, agents: tuple[str, ...], named: tuple[str, ...] = ()
    ) -> dict[str, Cue]:
        """The agents (of `agents`) a person's unnamed channel line is likely for, and why;
        `named` are the agents its text names outside an addressing form."""
        talk = self.talks.get(event.conversation.key)
        if talk is None and not named:
            return {}
        talk = talk or Talk()
        author, now, window = event.author.id, event.created_at, self.window
        # Most lines continue no exchange: say so before working anything out.
        if (
            not named
            and (talk.room_line < 0 or talk.line - talk.room_line > window.room_lines)
            and not any((agent, author) in talk.exchanges for agent in agents)
        ):
            return {}
        line = talk.line  # the number this line will get
        burst = talk.bursts.get(author)
        in_burst = burst is not None and _continues(burst, talk, now, window)
        turned = burst.turned if burst is not None and in_burst else set()
        spoke_last = self.last_author.get(event.conversation.key)
        elsewhere = talk.elsewhere.get(author, -1)
        found: dict[str, Cue] = {}
        for agent in agents:
            reason, mark = None, None
            exchange = talk.exchanges.get((agent, author))
            if (
                exchange is not None
                and exchange.line > elsewhere
                and self._alive(talk, exchange, now)
            ):
                reason, mark = PARTNER, exchange
            elif (
                (room := talk.room.get(agent)) is not None
                and room.line > elsewhere
                and self._alive(talk, room, now, self.window.room_lines)
            ):
                reason, mark = ROOM, room
            if reason is None and agent in named:
                reason = NAMED
            if reason is None:
                continue
            found[agent] = Cue(
                reason=reason,
                lines_since=line - mark.line if mark else line,
                seconds_since=(now - mark.at).total_seconds() if mark else 0.0,
                gap=talk.gap,
                in_burst=in_burst,
                burst_turned=agent in turned,
                agent_spoke_last=spoke_last is not None and spoke_last == agent,
            )
        return found

    def _alive(self, talk: Talk, mark: Mark, now: datetime, lines: int = -1) -> bool:
        seconds = (now - mark.at).total_seconds()
        return self.window.alive(talk.line - mark.line, seconds, talk.gap, lines)

    def note(
        self,
        event: ChatEvent,
        author_agent: str | None,
        addressed: tuple[str, ...],
        turned: tuple[str, ...],
        to_agents: tuple[str, ...],
    ) -> None:
        """Fold one channel message in: `addressed` are the people it names or replies to (user
        ids, agents' included), `turned` the agents it gave a model turn, `to_agents` the agents
        it was directed at (`to_me`)."""
        if event.conversation.kind is not _CHANNEL:
            return
        key = event.conversation.key
        talk = self.talks.get(key)
        if talk is None:
            talk = self.talks[key] = Talk()
        now, author = event.created_at, event.author.id
        if talk.last_at is not None:
            seconds = min(max((now - talk.last_at).total_seconds(), 0.0), _LONGEST_GAP_S)
            talk.gap += _PACE_WEIGHT * (seconds - talk.gap)
        mark = Mark(talk.line, now)
        if author_agent is not None:
            self.last_author[key] = author_agent
            talk.agent_line = talk.line
            people = [p for p in addressed if p != author]
            for person in people:
                talk.exchanges[author_agent, person] = mark
                talk.partner[author_agent] = (person, mark)
            if not people:
                talk.room[author_agent] = mark
                talk.room_line = mark.line
                # A line to the room answers the person the agent last talked with.
                partner = talk.partner.get(author_agent)
                if partner is not None and self._alive(talk, partner[1], now):
                    talk.exchanges[author_agent, partner[0]] = mark
        elif event.author.kind is _HUMAN:
            self.last_author[key] = author
            for agent in to_agents:
                # Someone speaking to an agent waits for its answer; an exchange already
                # under way goes on.
                talk.partner[agent] = (author, mark)
                if (agent, author) in talk.exchanges:
                    talk.exchanges[agent, author] = mark
            if addressed and not to_agents:
                talk.elsewhere[author] = talk.line
            burst = talk.bursts.get(author)
            if burst is not None and _continues(burst, talk, now, self.window):
                burst.last = mark
                burst.turned.update(turned)
            else:
                talk.bursts[author] = Burst(mark, set(turned))
        else:
            self.last_author[key] = author
        talk.line += 1
        talk.last_at = now


def _continues(burst: Burst, talk: Talk, now: datetime, window: Window) -> bool:
    """Whether a new line of the burst's author at `now` continues it: soon enough, and no
    agent spoke in between."""
    return (
        burst.last.line > talk.agent_line
        and (now - burst.last.at).total_seconds() <= window.burst_seconds
    )
