"""The `/c2a` command: its text parsed into a typed command, the same on every platform.

    /c2a status                    agents, what each is working on, queue depth
    /c2a why <message link>        the decision and reason each agent got for a message
    /c2a mute <agent> [duration]   no new turns until then (no duration: until unmuted)
    /c2a unmute <agent>
    /c2a leave <agent>             stop the agent's current turn
    /c2a claims                    open claims
    /c2a help

`parse` is pure; a text it cannot read is `Unreadable`, saying why. An agent is named as people
name it (`core.manifest.Workspace.agent_named`: `/c2a mute @lead`, `/c2a mute worker1`). A
duration is one or more `<number><unit>` (`s`, `m`, `h`, `d`): `90s`, `30m`, `1h30m`, `2d`. What
each command answers is `core.command_answers`; how the answer reads, `core.command_text`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

__all__ = [
    "COMMAND",
    "AgentCommand",
    "Claims",
    "Command",
    "Help",
    "Leave",
    "Mute",
    "Status",
    "Unmute",
    "Unreadable",
    "Why",
    "after_command",
    "parse",
    "parse_duration",
]

COMMAND = "/c2a"
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_DURATION = re.compile(r"(?:\d{1,6}[smhd])+")
_PART = re.compile(r"(\d{1,6})([smhd])")


@dataclass(frozen=True, slots=True)
class Status:
    """Every agent: muted or not, what it is working on, how many deliveries wait for it."""


@dataclass(frozen=True, slots=True)
class Why:
    """The decision each agent got for the message at `link` (a platform's message link)."""

    link: str


@dataclass(frozen=True, slots=True)
class AgentCommand:
    """A command about one agent (`Mute`, `Unmute`, `Leave`): only an approver of `agent` may
    run it."""

    agent: str


@dataclass(frozen=True, slots=True)
class Mute(AgentCommand):
    """`agent` gets no new turns for `duration` (None: until unmuted)."""

    duration: timedelta | None = None


@dataclass(frozen=True, slots=True)
class Unmute(AgentCommand):
    """`agent` is decided as before from now."""


@dataclass(frozen=True, slots=True)
class Leave(AgentCommand):
    """Stop `agent`'s current turn."""


@dataclass(frozen=True, slots=True)
class Claims:
    """The claims held now."""


@dataclass(frozen=True, slots=True)
class Help:
    """What the commands are."""


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A text that is no command: `problem` says why, for the person who typed it."""

    problem: str


Command = Status | Why | Mute | Unmute | Leave | Claims | Help
"""Who may run each: anyone for `Status`, `Why`, `Claims`, `Help`; an approver of the agent
for `Mute`, `Unmute`, `Leave` (`core.command_answers`)."""

_AGENT_COMMANDS: dict[str, type[Unmute | Leave]] = {"unmute": Unmute, "leave": Leave}
_PLAIN: dict[str, Command] = {"status": Status(), "claims": Claims(), "help": Help()}


def after_command(text: str) -> str | None:
    """What follows `/c2a` when a message typed where a platform has no command of its own
    (the web chat) is that command (`""` for `/c2a` alone); None for any other message."""
    words = text.split(maxsplit=1)
    if not words or words[0] != COMMAND:
        return None
    return words[1] if len(words) > 1 else ""


def parse(text: str) -> Command | Unreadable:
    """The command `text` (what follows `/c2a`) asks for; empty text is `Help`."""
    words = text.split()
    if not words:
        return Help()
    name, args = words[0].lower(), words[1:]
    if name in _PLAIN:
        return _PLAIN[name] if not args else Unreadable(f"`{name}` takes nothing after it")
    if name == "why":
        if len(args) != 1:
            return Unreadable("`why` takes one message link")
        return Why(args[0].strip("<>"))
    if name == "mute":
        if not 1 <= len(args) <= 2:
            return Unreadable("`mute` takes an agent and, if you like, a duration (30m, 2h, 1d)")
        duration = parse_duration(args[1]) if len(args) == 2 else None
        if len(args) == 2 and duration is None:
            return Unreadable(f"{args[1]!r} is not a duration (say 30m, 2h, 1d or 1h30m)")
        return Mute(args[0], duration)
    if name in _AGENT_COMMANDS:
        if len(args) != 1:
            return Unreadable(f"`{name}` takes one agent")
        return _AGENT_COMMANDS[name](args[0])
    return Unreadable(f"no command {name!r}")


def parse_duration(text: str) -> timedelta | None:
    """`90s`, `30m`, `1h30m`, `2d` as a timedelta; None for anything else or for zero."""
    text = text.lower()
    if not _DURATION.fullmatch(text):
        return None
    total = timedelta()
    for number, unit in _PART.findall(text):
        total += timedelta(**{_UNITS[unit]: int(number)})
    return total or None
