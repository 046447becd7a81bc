"""Conversation continuity in flat channels: who each agent is talking with, and how recently.

Most team chat names nobody: people answer the person they were just talking to. For each
channel conversation this module remembers, from the messages themselves, when each agent last
exchanged a line with each person (the agent named them, they named or DMed the agent, or the
agent spoke to the room right after), when each agent last spoke to the room, who each person
last named instead, and each person's current burst of lines. From that it tells the rules
which agents a new unnamed line is likely for (`Continuity.cues`): the `to_me_likely` band.
It also keeps what the learned scorer (`core.scorer`) reads of the room: how active each agent
has been, how often it took up a question asked to the room, and when each person first spoke;
a question to the room is a cue (`room_question`) only when the caller asks for those, and so is
a person's other unnamed line (a statement, a problem report: `room_statement`) that continues
no exchange with any agent and is neither a closing nor a bot command. And it
learns which agent answers bot commands (`!paste`, `!info nginx | alice`): the first agent to
speak within two lines of a command answered it, and a command is a cue (`command`) for an
agent with a recent record of that (each command since counts it down by a fifth).

Windows adapt to the channel's pace: an exchange survives `Window.lines` lines of the channel,
and at most the time the channel takes for twice that many lines (never less than
`Window.min_seconds`), so a quiet channel waits longer in seconds and a busy one in lines. The
state changes only through `Continuity.note`, called once per message in ledger order, so
replaying the ledger rebuilds it (see `core.state`).

Only the `CONVERSATIONS_HELD` channels with the most recent lines are remembered
(`core.state_recent`): a channel evicted has no `Talk`, so its next line is judged exactly as
the first line of a channel the host never saw (no partners, the first guess at its pace, no
record of answering commands), and its lines are counted again from there.

Within a channel held, what it keeps per person (their first line, burst, room question, line
naming someone else, and exchanges with agents) goes once the person has been out of the
channel's last `PEOPLE_LINES` lines (neither spoke nor was spoken to there): far beyond every
window the rules read (`Window.lines`, `_TAKEN_UP_LINES`, the scorer's 200 lines), so a busy
channel keeps the people of its recent lines, not everyone who ever spoke in it. A person
forgotten is judged as one the channel never saw: new to it and a stranger to every agent for
the scorer, with no exchange a line to an agent carries on, or that makes an agent naming them
soon after their room question not a first taking-up.

It is just over 400 lines: the rules and the memory they read are folded and read here together,
so that what is kept (and forgotten) and what the rules read of it cannot drift apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Final, NamedTuple

from core.closings import is_closing
from core.continuity_cue import (
    ROOM_QUESTION,
    ROOM_STATEMENT,
    SCORED,
    Cue,
    Seen,
    decayed,
)
from core.events import AuthorKind, ChatEvent, ConversationKind
from core.state_recent import Recent

__all__ = [
    "ASKS_THE_ROOM",
    "COMMAND",
    "CONVERSATIONS_HELD",
    "PARTNER",
    "PEOPLE_LINES",
    "ROOM_QUESTION",
    "ROOM_STATEMENT",
    "SCORED",
    "Continuity",
    "Cue",
    "Talk",
    "Window",
    "asks_the_room",
    "states",
]

CONVERSATIONS_HELD: Final = 1_000
"""How many channels continuity remembers, the most recently active: about 16 KB each, so some
16 MB. An exchange lasts eight lines and at most a few hours; a thousand channels all active
within that is far beyond a busy workspace, where most channels are quiet on any given day."""

PEOPLE_LINES: Final = 1_000
"""How many lines of its channel a person is remembered for after they last spoke there or an
agent spoke to them: what is kept per person is some 220 bytes, and a busy channel sees new
people every day."""

_CHANNEL = ConversationKind.CHANNEL
_HUMAN = AuthorKind.HUMAN
# The first guess at a channel's pace before it has shown one: a line every 20 seconds.
_FIRST_GAP_S = 20.0
_PACE_WEIGHT = 0.1  # how much one new gap moves the running mean
_LONGEST_GAP_S = 600.0  # a night's silence counts as ten minutes in the mean

PARTNER = "conversation_partner"
ROOM = "answer_to_my_line"
NAMED = "named_in_text"
COMMAND = "command"
# A question to the room is taken up by an agent naming its asker within this many lines.
_TAKEN_UP_LINES = 12

# A message that asks the room ("lunch anyone?", "who is around?").
ASKS_THE_ROOM: Final = re.compile(r"\b(?:any(?:one|body)|every(?:one|body)|who)\b", re.IGNORECASE)


# A command to a chat bot: `!word` first in the line (`!paste`, `!info nginx | alice`).
_COMMAND: Final = re.compile(r"\s*!\s?[^\W\d_]")
# An agent answered a command when it was the first agent to speak within this many lines of it.
_COMMAND_LINES = 2
# Each new command keeps this share of an agent's record of answering them; at least
# `_COMMAND_AGENT` of it makes a command likely for the agent.
_COMMAND_DECAY = 0.8
_COMMAND_AGENT = 0.5


def is_command(text: str) -> bool:
    """Whether a line is a command to a chat bot: `!` and a word first."""
    return text[:1] in "! " and _COMMAND.match(text) is not None


def asks_the_room(text: str) -> bool:
    """Whether an unaddressed line is a question to the room: a `?`, or asks anyone, who..."""
    return "?" in text or ASKS_THE_ROOM.search(text) is not None


@dataclass(frozen=True, slots=True)
class Window:
    """How long an exchange lasts, and how far apart one person's lines stay one burst."""

    lines: int = 8
    room_lines: int = 1  # how long an agent's line to the room waits for answers
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


class Mark(NamedTuple):
    """A line of the conversation: its number and time (POSIX seconds: subtracting floats
    costs a fraction of subtracting datetimes, and lines are counted on every message)."""

    line: int
    at: float


@dataclass(slots=True)
class Burst:
    """One person's run of lines: when the last came, and the agents it already gave a turn."""

    line: int
    at: float
    turned: set[str]


@dataclass(slots=True)
class Talk:
    """What continuity remembers of one conversation."""

    line: int = 0
    last_at: float | None = None
    gap: float = _FIRST_GAP_S
    agent_line: int = -1  # the last line an agent wrote
    exchanges: dict[tuple[str, str], Mark] = field(default_factory=dict)  # (agent, person)
    people: set[str] = field(default_factory=set)  # every person of `exchanges`
    # agent -> the person it last spoke to by name, or who last spoke to it, and that line
    partner: dict[str, tuple[str, Mark]] = field(default_factory=dict)
    room: dict[str, Mark] = field(default_factory=dict)  # agent -> its last line to the room
    room_line: int = -1  # the last line any agent wrote to the room
    elsewhere: dict[str, int] = field(default_factory=dict)  # person -> line naming another
    bursts: dict[str, Burst] = field(default_factory=dict)  # person -> current burst
    spoke: dict[str, int] = field(default_factory=dict)  # agent -> its last line
    activity: dict[str, tuple[float, int]] = field(default_factory=dict)  # agent -> lines, decayed
    # agent -> questions to the room it took up (named the asker soon after), decayed
    taken_up: dict[str, tuple[float, int]] = field(default_factory=dict)
    asked: dict[str, int] = field(default_factory=dict)  # person -> their last room question
    command: int = -1  # the line of the last command not yet answered
    commands: int = 0  # commands seen
    # agent -> commands it answered, decayed by each command since (value, commands then)
    answers: dict[str, tuple[float, int]] = field(default_factory=dict)
    first: dict[str, int] = field(default_factory=dict)  # person -> their first line
    # person -> the last line they spoke or were spoken to, the least lately first: who of the
    # maps above is forgotten (`PEOPLE_LINES`)
    seen: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class Continuity:
    """Every channel conversation's `Talk`, and the window they are judged by."""

    window: Window = field(default_factory=Window)
    talks: Recent[str, Talk] = field(default_factory=lambda: Recent(CONVERSATIONS_HELD))
    # conversation -> the author of its last line; written with `talks`, so evicted with it
    last_author: Recent[str, str] = field(default_factory=lambda: Recent(CONVERSATIONS_HELD))

    def cues(
        self,
        event: ChatEvent,
        agents: tuple[str, ...],
        named: tuple[str, ...] = (),
        room: bool = False,
    ) -> dict[str, Cue]:
        """The agents (of `agents`) a person's unnamed channel line is likely for, and why;
        `named` are the agents its text names outside an addressing form. With `room`, a
        question to the room is a cue (`ROOM_QUESTION`) for every agent without another, and
        a line no agent has any cue for that `states` something is one for every agent
        (`ROOM_STATEMENT`)."""
        talk = self.talks.get(event.conversation.key)
        asks = room and asks_the_room(event.text)
        if talk is None and not named and not room:
            return {}
        talk = talk or Talk()
        author, window = event.author.id, self.window
        command = bool(talk.answers) and is_command(event.text)
        # Most lines continue no exchange: say so before working anything out.
        quiet = (
            not named
            and not asks
            and not command
            and (talk.room_line < 0 or talk.line - talk.room_line > window.room_lines)
            and author not in talk.people
        )
        if quiet and not room:
            return {}
        now = event.created_at.timestamp()
        burst = talk.bursts.get(author)
        in_burst = burst is not None and _continues(burst, talk, now, window)
        turned = burst.turned if burst is not None and in_burst else set()
        seen = Seen(
            talk, event, now, in_burst, turned, self.last_author.get(event.conversation.key)
        )
        found = {} if quiet else self._cues(seen, agents, named, asks, command)
        if not found and room and not asks and states(event.text):
            return {agent: seen.room_cue(agent, ROOM_STATEMENT) for agent in agents}
        return found

    def _cues(
        self,
        seen: Seen,
        agents: tuple[str, ...],
        named: tuple[str, ...],
        asks: bool,
        command: bool,
    ) -> dict[str, Cue]:
        """The cues of a line that may continue an exchange, name an agent, be a command it
        answers or ask the room."""
        talk, now, line = seen.talk, seen.now, seen.talk.line
        elsewhere = talk.elsewhere.get(seen.event.author.id, -1)
        found: dict[str, Cue] = {}
        live: set[str] = set()
        for agent in agents:
            reason, mark = None, None
            exchange = talk.exchanges.get((agent, seen.event.author.id))
            if (
                exchange is not None
                and exchange.line > elsewhere
                and self._alive(talk, exchange, now)
            ):
                reason, mark = PARTNER, exchange
                live.add(agent)
            elif (
                (room_mark := talk.room.get(agent)) is not None
                and room_mark.line > elsewhere
                and self._alive(talk, room_mark, now, self.window.room_lines)
            ):
                reason, mark = ROOM, room_mark
            if reason is None and agent in named:
                reason = NAMED
            if reason is None and command and _answers(talk, agent) >= _COMMAND_AGENT:
                reason = COMMAND
            if reason is None and asks:
                found[agent] = seen.room_cue(agent, ROOM_QUESTION)
            elif reason is not None:
                found[agent] = Cue(
                    reason=reason,
                    lines_since=line - mark.line if mark else line,
                    seconds_since=now - mark.at if mark else 0.0,
                    gap=talk.gap,
                    in_burst=seen.in_burst,
                    burst_turned=agent in seen.turned,
                    agent_spoke_last=seen.spoke_last == agent,
                )
        if live and asks:
            for agent, cue in found.items():
                if cue.reason == ROOM_QUESTION and any(other != agent for other in live):
                    found[agent] = replace(cue, other_partner=True)
        return found

    def _alive(self, talk: Talk, mark: Mark, now: float, lines: int = -1) -> bool:
        return self.window.alive(talk.line - mark.line, now - mark.at, talk.gap, lines)

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
        talk = self.talks.hold(key, self.talks.get(key) or Talk())
        now, author, line = event.created_at.timestamp(), event.author.id, talk.line
        if talk.last_at is not None:
            seconds = min(max(now - talk.last_at, 0.0), _LONGEST_GAP_S)
            talk.gap += _PACE_WEIGHT * (seconds - talk.gap)
        if author_agent is not None:
            self.last_author.hold(key, author_agent)
            self._note_agent(talk, author_agent, [p for p in addressed if p != author], now)
        elif event.author.kind is _HUMAN:
            self.last_author.hold(key, author)
            _seen(talk, author)
            talk.first.setdefault(author, line)
            if not addressed and not to_agents and asks_the_room(event.text):
                talk.asked[author] = line
            if is_command(event.text):
                talk.command = line
                talk.commands += 1
            for agent in to_agents:
                # Someone speaking to an agent waits for its answer; an exchange already
                # under way goes on.
                mark = Mark(line, now)
                talk.partner[agent] = (author, mark)
                if (agent, author) in talk.exchanges:
                    talk.exchanges[agent, author] = mark
            if addressed and not to_agents:
                talk.elsewhere[author] = line
            burst = talk.bursts.get(author)
            if burst is not None and _continues(burst, talk, now, self.window):
                burst.line, burst.at = line, now
                if turned:
                    burst.turned.update(turned)
            else:
                talk.bursts[author] = Burst(line, now, set(turned))
        else:
            self.last_author.hold(key, author)
        talk.line += 1
        talk.last_at = now
        _forget_people(talk)

    def _note_agent(self, talk: Talk, agent: str, people: list[str], now: float) -> None:
        """An agent's line naming `people` (user ids, not its own): they are its partners (a
        question to the room one of them asked lately is taken up); naming nobody, it speaks
        to the room."""
        line = talk.line
        mark = Mark(line, now)
        talk.agent_line = line
        talk.spoke[agent] = line
        if talk.command >= 0 and line - talk.command <= _COMMAND_LINES:
            talk.answers[agent] = (_answers(talk, agent) + 1.0, talk.commands)
            talk.command = -1
        talk.activity[agent] = (decayed(talk.activity.get(agent), line) + 1, line)
        for person in people:
            asked = talk.asked.get(person, -1)
            if (
                asked >= 0
                and line - asked <= _TAKEN_UP_LINES
                and (agent, person) not in talk.exchanges
            ):
                talk.taken_up[agent] = (decayed(talk.taken_up.get(agent), line) + 1, line)
            talk.exchanges[agent, person] = mark
            talk.people.add(person)
            talk.partner[agent] = (person, mark)
            _seen(talk, person)
        if not people:
            talk.room[agent] = mark
            talk.room_line = line
            # A line to the room answers the person the agent last talked with.
            partner = talk.partner.get(agent)
            if partner is not None and self._alive(talk, partner[1], now):
                talk.exchanges[agent, partner[0]] = mark
                talk.people.add(partner[0])
                _seen(talk, partner[0])


def states(text: str) -> bool:
    """Whether an unaddressed line that asks nothing may still want an answer (a statement, a
    problem report): it says something, and is neither a bot command nor a closing."""
    return bool(text.strip()) and not is_command(text) and not is_closing(text)


def _answers(talk: Talk, agent: str) -> float:
    """The agent's record of answering commands as it stands now."""
    count = talk.answers.get(agent)
    if count is None:
        return 0.0
    value, at = count
    return value * _COMMAND_DECAY ** (talk.commands - at)


def _seen(talk: Talk, person: str) -> None:
    """`person` spoke, or was spoken to, at the talk's current line: the newest of `seen`."""
    talk.seen.pop(person, None)
    talk.seen[person] = talk.line


def _forget_people(talk: Talk) -> None:
    """Forget what the talk keeps of each person out of its last `PEOPLE_LINES` lines (the
    least lately seen come first in `seen`, so only those are looked at)."""
    seen, oldest = talk.seen, talk.line - PEOPLE_LINES
    while seen:
        person, line = next(iter(seen.items()))
        if line >= oldest:
            return
        del seen[person]
        for kept in (talk.first, talk.bursts, talk.elsewhere, talk.asked):
            kept.pop(person, None)
        talk.people.discard(person)
        for agent in talk.spoke:  # the only agents with exchanges: each spoke to have one
            talk.exchanges.pop((agent, person), None)


def _continues(burst: Burst, talk: Talk, now: float, window: Window) -> bool:
    """Whether a new line of the burst's author at `now` continues it: soon enough, and no
    agent spoke in between."""
    return burst.line > talk.agent_line and now - burst.at <= window.burst_seconds
