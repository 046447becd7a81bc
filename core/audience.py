"""Who an inbound event concerns: the agents whose own connections received it, the agents
that can see it, the agent a platform vouches it names, the principal the ledger records it
under, and, of a thread reply also posted to its channel, who meets it in the channel.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from core.attention import follows_thread
from core.attention_context import Context
from core.events import AuthorKind, ChatEvent, Conversation, ConversationKind, EventKind
from core.manifest import Workspace
from core.state import State

__all__ = ["Audience", "in_channel", "outside_thread"]

log = logging.getLogger("core.engine")  # the engine's own log: the warning is about ingest

_TEXT_KINDS = (EventKind.MESSAGE, EventKind.EDIT)
_EDIT = EventKind.EDIT
_THREAD = ConversationKind.THREAD


class Audience:
    """Works out the agents an event concerns, for one workspace."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        # Agents whose manifest user id was found not to be their bot's (logged once each).
        self._misnamed: set[str] = set()

    def receivers(self, event: ChatEvent, via: str | None) -> list[str]:
        """The agents whose own connections received this payload."""
        found = []
        if via is not None and via in self.workspace.manifest.agents:
            found.append(via)
        bot = self.workspace.agent_for(event.platform, event.bot_user_id)
        if bot is not None and bot not in found:
            found.append(bot)
        return found

    def seeing(
        self, event: ChatEvent, state: State, receivers: list[str], decided: set[str]
    ) -> list[str]:
        """Agents that can see the event and have no decision for it yet, in manifest order."""
        author = self.workspace.agent_for(event.platform, event.author.id)
        target = state.target(event) if event.kind is _EDIT else None
        seen_before = target.delivered if target is not None else {}
        members = state.members.get(event.conversation.scope, ())  # who can see it
        return [
            agent
            for agent in self.workspace.agent_ids
            if agent not in decided
            and (agent in members or agent in receivers or agent == author or agent in seen_before)
        ]

    def typing_targets(self, event: ChatEvent, state: State, via: str | None) -> list[str]:
        """Who a person's typing is told to: each agent's own connection reports it, so only
        the agent whose connection received it (everyone who can see the conversation when
        none is named)."""
        receivers = self.receivers(event, via)
        return receivers or self.seeing(event, state, receivers, set())

    def principal(self, event: ChatEvent) -> str:
        """Who the ledger records as the event's author: `agent:<id>` or `<platform>:<id>`."""
        agent = self.workspace.agent_for(event.platform, event.author.id)
        if agent is not None or event.author.kind is AuthorKind.AGENT:
            return f"agent:{agent}"
        return f"{event.platform}:{event.author.id}"

    def name_receiver(self, event: ChatEvent, via: str | None) -> ChatEvent:
        """The event, naming the agent whose connection received it when the platform vouches
        that it does: it was sent because it names that bot (`names_receiver`, a mention
        event), or its text names the connection's own bot user (`bot_user_id`) while
        the manifest knows no agent by that id. The receiving agent is the one the manifest
        binds to `bot_user_id`, else `via`; its manifest user id is added to the mentions, so
        the rules see the mention even when the manifest's id is not the bot's (an app
        reinstalled, an id mistyped). That mismatch is logged once per agent."""
        own = event.bot_user_id
        if not event.names_receiver and (own is None or own not in event.mentions.users):
            return event
        if event.kind not in _TEXT_KINDS:
            return event
        workspace = self.workspace
        known = workspace.agent_for(event.platform, own)
        if not event.names_receiver and known is not None:
            return event  # the text names a bot the manifest knows: the rules see it
        agent = known or (via if via in workspace.manifest.agents else None)
        me = workspace.user_id(event.platform, agent) if agent is not None else None
        if agent is None or me is None or me in event.mentions.users:
            return event
        if agent not in self._misnamed:
            self._misnamed.add(agent)
            log.warning(
                "%s agent %s: the platform delivered a mention of it, but its text names %s, "
                "not the manifest's user id %s; taken as a mention of %s (check "
                "agents.%s.%s.user_id against the bot's own id)",
                event.platform,
                agent,
                ", ".join(event.mentions.users) or "no user",
                me,
                agent,
                agent,
                event.platform,
            )
        mentions = replace(event.mentions, users=(*event.mentions.users, me))
        return replace(event, mentions=mentions)


def outside_thread(event: ChatEvent, audience: list[str], ctx: Context) -> list[str]:
    """Of a thread reply also posted to its channel, the audience that does not follow the
    thread (`follows_thread`): they are told of it as a message in the channel."""
    if not event.also_in_channel or event.conversation.kind is not _THREAD:
        return []
    return [agent for agent in audience if not follows_thread(ctx, agent)]


def in_channel(event: ChatEvent) -> ChatEvent:
    """A thread reply as the message it also is in the thread's channel."""
    channel = Conversation(id=event.conversation.scope, kind=ConversationKind.CHANNEL)
    return replace(event, conversation=channel)
