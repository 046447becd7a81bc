"""Answering `/c2a` on the host's engine, for whichever platform the command came from.

`Commands.answer` is the one call a platform makes: who ran the command (platform, user id,
the groups or roles the platform says they are in), the text after `/c2a`, and, for `why`,
how to read the platform's message links (`Locate`), and, where a platform has conversations not
everyone can read, whether this person may read one (`MayRead`). It returns the text to show
that person alone. `status`, `why`, `claims` and `help` are open to anyone, but the words of a
direct message (and `why` of one) only to its author, and those of a conversation (and `why`
of one of its messages) only to the people the platform says may read it, asked once an answer
per conversation; a link or an id is no proof of access. `mute`, `unmute` and `leave`
only to the agent's approvers (`core.approvals.may_decide`, manifest `agents.<id>.approvers`),
the same people who answer its questions. Every command, refused or not, is in the audit log
(`what` = `command`).

`leave` stops the agent's current turn the way the engine stops work on an event: each event
the agent owes an answer gets the `ignored` disposition (so no reminder chases it) and a
`Cancel` goes to its harness, through `sink`, once that is committed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from core import command_text as say
from core.approvals import may_decide
from core.clock import format_time
from core.commands import (
    AgentCommand,
    Claims,
    Command,
    Help,
    Leave,
    Mute,
    Status,
    Unmute,
    Unreadable,
    Why,
    parse,
)
from core.emission import Emission
from core.events import Conversation, ConversationKind
from core.markup import PLAIN_TEXT
from core.mutes import record_mute
from core.state_records import message_key

if TYPE_CHECKING:
    from core.engine import Engine

__all__ = ["Commands", "Locate", "MayRead", "Sink"]

_HIDDEN = "(its words are for its author)"  # what others see of a direct message
_CLOSED = "(its words are for its members)"  # what others see of a conversation they are not in

Locate = Callable[[str], tuple[str, str] | None]
"""A platform's reading of a message link: `(conversation id, message id)`, or None."""
MayRead = Callable[[str], Awaitable[bool]]
"""Whether the person who ran the command may read a conversation, by the id of the channel
that decides it (`Conversation.scope`), as their platform says; False when it cannot tell."""
Sink = Callable[[list[Emission]], Awaitable[None]]


class Commands:
    """The `/c2a` commands of one workspace's engine; `sink` takes what `leave` emits."""

    def __init__(self, engine: Engine, sink: Sink | None = None) -> None:
        self.engine = engine
        self.sink = sink

    async def answer(
        self,
        platform: str,
        user: str,
        groups: Sequence[str],
        text: str,
        *,
        locate: Locate | None = None,
        may_read: MayRead | None = None,
    ) -> str:
        """The reply to `/c2a <text>` run by `user` on `platform` (see the module doc); with no
        `may_read`, every conversation but a direct message is open to anyone."""
        command = parse(text)
        agent = command.agent if isinstance(command, AgentCommand) else ""
        named = self._named(command)
        agent = named or agent
        if isinstance(command, Unreadable):
            reply, outcome = say.unreadable_text(command.problem), "unreadable"
        elif agent and named is None:
            reply, outcome = (
                say.unknown_agent_text(agent, self.engine.workspace.agent_ids),
                "unknown",
            )
        elif named and not may_decide(approvers := self._approvers(named), user, groups):
            reply, outcome = say.not_approver_text(named, approvers), "refused"
        else:
            if isinstance(command, AgentCommand) and named:
                command = replace(command, agent=named)
            reader = _Reader(user, may_read)
            reply, outcome = await self._run(command, platform, reader, locate), "answered"
        detail = {"platform": platform, "user": user, "text": text}
        await self._audit(agent, outcome, detail)
        return reply

    def approvers_of(self, text: str) -> tuple[str, ...]:
        """Who may run `/c2a <text>`: the approvers of the agent it names, for a platform to
        look up which of their groups the person is in; () when it names none."""
        named = self._named(parse(text))
        return self._approvers(named) if named else ()

    def _named(self, command: Command | Unreadable) -> str | None:
        """The agent a command is about, as people name it (id or short name, `@` or not)."""
        if not isinstance(command, AgentCommand):
            return None
        return self.engine.workspace.agent_named(command.agent)

    def _approvers(self, agent: str) -> tuple[str, ...]:
        return tuple(self.engine.approvals.approvers.get(agent, ()))

    async def _run(
        self, command: Command, platform: str, reader: _Reader, locate: Locate | None
    ) -> str:
        match command:
            case Status():
                return say.status_text(await self.status(reader), bold=self._bold(platform))
            case Why(link):
                return await self.why(platform, link, locate, reader)
            case Claims():
                return say.claims_text(await self.claims(reader), bold=self._bold(platform))
            case Help():
                return say.HELP
            case Mute(agent, duration):
                now = self.engine.clock.now()
                until = now + duration if duration else None
                await self._mute(agent, until, muted=True)
                return say.muted_text(agent, until)
            case Unmute(agent):
                await self._mute(agent, None, muted=False)
                return say.unmuted_text(agent)
            case Leave(agent):
                return say.left_text(agent, await self.stop(agent, reader.user))

    # ---- what each command reads or does ------------------------------------------------------

    async def status(self, reader: _Reader) -> list[say.AgentLine]:
        """Every agent, in manifest order: its open work, its queue, mute and harness; the
        words of work `reader` may not read are hidden."""
        engine, now = self.engine, self.engine.clock.now()
        lines = []
        for agent in engine.workspace.agent_ids:
            working = [say.Work(*await self._where(e, reader)) for e in engine.owed(agent)]
            lines.append(
                say.AgentLine(
                    agent=agent,
                    working=working,
                    queued=len(await engine.store.pending(agent)),
                    muted=engine.state.is_muted(agent, now),
                    muted_until=engine.state.muted.get(agent),
                    unavailable=agent in engine.unavailable,
                    harness=engine.workspace.manifest.agents[agent].harness is not None,
                )
            )
        return lines

    async def why(self, platform: str, link: str, locate: Locate | None, reader: _Reader) -> str:
        """Each agent's decision for the message at `link`, and for each of its edits, to the
        people who may read it alone (a link is no proof of access)."""
        found = locate(link) if locate is not None else None
        if found is None:
            return say.no_link_text(link)
        record = self.engine.state.messages.get(message_key(platform, *found))
        if record is None:
            return say.unknown_message_text()
        if not await reader.may_see(record.conversation, record.author_id):
            if record.conversation.kind is ConversationKind.DM:
                return say.private_message_text()
            return say.closed_conversation_text()
        versions = []
        for event_id in record.versions or [record.event_id]:
            stored = await self.engine.store.deliveries(event_id)
            versions.append(
                [
                    say.VerdictLine(
                        agent=d.decision.agent,
                        policy=d.decision.policy.value,
                        reason=d.decision.reason,
                        mode=d.decision.mode.value,
                        status=d.status,
                        disposition=d.disposition.value if d.disposition else None,
                    )
                    for d in stored
                ]
            )
        return say.why_text(record.text, versions, bold=self._bold(platform))

    async def claims(self, reader: _Reader) -> list[say.ClaimLine]:
        """The claims held now, soonest to end first, their words as `reader` may see them."""
        engine, now = self.engine, self.engine.clock.now()
        held = [(until, item, agent) for item, (agent, until) in engine.state.claims.items()]
        lines = []
        for until, item, agent in sorted(held):
            if until <= now:
                continue
            event = await engine.event(item)
            if event is None:
                text = None
            else:
                text = await reader.words(event.conversation, event.author.id, event.text)
            lines.append(say.ClaimLine(item=item, agent=agent, until=until, text=text))
        return lines

    async def stop(self, agent: str, user: str) -> int:
        """End every event `agent` owes an answer (`Engine.end_work`), then cancel it in its
        harness; returns how many."""
        engine = self.engine
        async with engine.transaction():
            cancels = await engine.end_work(agent, f"stopped by {user}")
        if cancels and self.sink is not None:
            await self.sink(cancels)
        return len(cancels)

    def _bold(self, platform: str) -> str:
        """How `platform` writes bold text (`core.markup.Markup.bold`)."""
        return self.engine.workspace.markup.get(platform, PLAIN_TEXT).bold

    async def _where(self, event_id: str, reader: _Reader) -> tuple[str, str]:
        event = await self.engine.event(event_id)
        if event is None:
            return "?", ""
        conversation = event.conversation
        if await reader.may_see(conversation, event.author.id):
            return conversation.key, event.text
        if conversation.kind is ConversationKind.DM:
            return "a direct message", _HIDDEN
        return "a conversation you are not in", _CLOSED

    async def _mute(self, agent: str, until: datetime | None, *, muted: bool) -> None:
        engine = self.engine
        async with engine.transaction():
            now = engine.clock.now()
            await record_mute(engine.store, engine.state, agent, now, until, muted=muted)

    async def _audit(self, agent: str, outcome: str, detail: dict[str, str]) -> None:
        engine = self.engine
        clean = engine.redactor.data(detail)
        async with engine.transaction():
            stamp = format_time(engine.clock.now())
            await engine.store.audit(agent, "command", outcome, clean, stamp)


@dataclass(slots=True)
class _Reader:
    """The person who ran a command, and what they may read: a direct message's words are its
    author's alone; any other conversation's are theirs whom `may_read` lets in (asked once
    a conversation an answer), everyone's when there is no `may_read`."""

    user: str
    may_read: MayRead | None
    _asked: dict[str, bool] = field(default_factory=dict)

    async def may_see(self, conversation: Conversation, author: str) -> bool:
        """Whether the reader may read what `author` said in `conversation`."""
        if conversation.kind is ConversationKind.DM:
            return author == self.user
        if self.may_read is None:
            return True
        scope = conversation.scope
        if scope not in self._asked:
            self._asked[scope] = await self.may_read(scope)
        return self._asked[scope]

    async def words(self, conversation: Conversation, author: str, text: str) -> str:
        """`text` when the reader may read it; otherwise what stands in for it."""
        if await self.may_see(conversation, author):
            return text
        return _HIDDEN if conversation.kind is ConversationKind.DM else _CLOSED
