"""How the answers to `/c2a` read: every line a person sees, written here and nowhere else.

Pure functions of plain values (`core.command_answers` gathers them). The text is plain, with
`code` spans, which Slack, Discord and the web chat all show as written, and agents' names in
bold, written with the `bold` mark of the platform's markup (`core.markup.Markup.bold`: `*` on
Slack, `**` on Discord, where `*` would be italics).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from core.clock import format_time

__all__ = [
    "HELP",
    "AgentLine",
    "ClaimLine",
    "VerdictLine",
    "Work",
    "claims_text",
    "closed_conversation_text",
    "left_text",
    "muted_text",
    "no_link_text",
    "not_approver_text",
    "private_message_text",
    "snippet",
    "status_text",
    "unknown_agent_text",
    "unknown_message_text",
    "unmuted_text",
    "unreadable_text",
    "why_text",
]

_SNIPPET = 60  # characters of a message shown where a command names it
_WORK_SHOWN = 3  # events listed per agent by `status`

HELP = """\
`/c2a status`: agents, what each is working on, queue depth
`/c2a why <message link>`: the decision and reason each agent got for that message
`/c2a mute <agent> [duration]`: no new turns until then (30m, 2h, 1d; none: until unmuted)
`/c2a unmute <agent>`: turns again
`/c2a leave <agent>`: stop the agent's current turn
`/c2a claims`: who holds which message, and until when
`/c2a help`: this
mute, unmute and leave are for the agent's approvers; the rest for anyone."""


@dataclass(frozen=True, slots=True)
class Work:
    """An event an agent owes an answer: where it was said, and its text."""

    conversation: str
    text: str


@dataclass(frozen=True, slots=True)
class AgentLine:
    """One agent in `status`."""

    agent: str
    working: Sequence[Work]
    queued: int
    muted: bool = False
    muted_until: datetime | None = None
    unavailable: bool = False
    harness: bool = True  # False: the manifest gives it none, so nothing answers it


@dataclass(frozen=True, slots=True)
class VerdictLine:
    """What one agent was decided for a message, and how far its delivery got."""

    agent: str
    policy: str
    reason: str
    mode: str
    status: str
    disposition: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimLine:
    """A claim held now: on `item` (a message, when the ledger knows it: `text`), by `agent`."""

    item: str
    agent: str
    until: datetime
    text: str | None = None


def snippet(text: str) -> str:
    """A message's text on one line, cut short."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _SNIPPET else flat[: _SNIPPET - 1] + "…"


def status_text(agents: Sequence[AgentLine], *, bold: str) -> str:
    """`status`: a line per agent, and under it what it is working on."""
    if not agents:
        return "No agents."
    lines: list[str] = []
    for line in agents:
        marks = [f"{len(line.working)} open", f"{line.queued} queued"]
        if line.muted:
            until = _when(line.muted_until) if line.muted_until else "unmuted"
            marks.append(f"muted until {until}")
        if not line.harness:
            marks.append("no harness")
        elif line.unavailable:
            marks.append("harness down")
        lines.append(f"{bold}{line.agent}{bold}: {', '.join(marks)}")
        for work in line.working[:_WORK_SHOWN]:
            lines.append(f"  • in {work.conversation}: {snippet(work.text) or '(no text)'}")
        if len(line.working) > _WORK_SHOWN:
            lines.append(f"  • and {len(line.working) - _WORK_SHOWN} more")
    return "\n".join(lines)


def why_text(text: str, versions: Sequence[Sequence[VerdictLine]], *, bold: str) -> str:
    """`why`: the message, then each agent's decision for it (and for each of its edits)."""
    lines = [f"Message: {snippet(text) or '(no text)'}"]
    for number, verdicts in enumerate(versions):
        if number:
            lines.append(f"After edit {number}:")
        if not verdicts:
            lines.append("  no agent could see it")
        for v in verdicts:
            ended = f", {v.disposition}" if v.disposition else ""
            name = f"{bold}{v.agent}{bold}"
            lines.append(f"  {name}: {v.policy} (`{v.reason}`), {v.mode}, {v.status}{ended}")
    return "\n".join(lines)


def claims_text(claims: Sequence[ClaimLine], *, bold: str) -> str:
    """`claims`: each claim held now, soonest to end first."""
    if not claims:
        return "No open claims."
    lines = []
    for claim in claims:
        what = snippet(claim.text) if claim.text is not None else f"`{claim.item}`"
        lines.append(f"{bold}{claim.agent}{bold} holds {what} until {_when(claim.until)}")
    return "\n".join(lines)


def muted_text(agent: str, until: datetime | None) -> str:
    when = f"until {_when(until)}" if until else "until someone unmutes it"
    return f"{agent} is muted {when}: it gets no new turns."


def unmuted_text(agent: str) -> str:
    return f"{agent} is unmuted: it gets turns again."


def left_text(agent: str, stopped: int) -> str:
    if not stopped:
        return f"{agent} is working on nothing: nothing to stop."
    return f"Stopped {agent}'s turn on {stopped} message{'s' if stopped > 1 else ''}."


def not_approver_text(agent: str, approvers: Sequence[str]) -> str:
    if not approvers:  # nobody can: say where they are named
        where = f"agents.{agent}.approvers"
        return f"{agent} has no approvers, so nobody can do that (name them in {where})."
    return f"Only {agent}'s approvers can do that."


def unknown_agent_text(agent: str, agents: Sequence[str]) -> str:
    return f"No agent {agent!r}; the agents are {', '.join(agents)}."


def unreadable_text(problem: str) -> str:
    return f"{problem[0].upper()}{problem[1:]}.\n{HELP}"


def no_link_text(link: str) -> str:
    return f"{link!r} is not a link to a message here."


def private_message_text() -> str:
    return "That message is in a direct message: only its author can ask why."


def closed_conversation_text() -> str:
    return "That message is in a conversation you are not in: only its members can ask why."


def unknown_message_text() -> str:
    return "The ledger has no message at that link (it may predate c2a, or be elsewhere)."


def _when(at: datetime) -> str:
    """A time as an answer shows it: to the second (the clock's microseconds are noise)."""
    return format_time(at.replace(microsecond=0))
