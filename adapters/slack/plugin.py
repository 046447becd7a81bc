"""Slack as a registered platform: its normaliser, its reactions and its live side.

`connect` is used when an agent has a bot token (`agents.<id>.slack.bot_token_env`). Its start
checks every token and scope (one line each), asks Slack once which agents are in each channel
the manifest configures, reads what was said while the host was down longer than Slack sends
events again (`adapters.slack.catchup`), and only then opens the agents' connections.
"""

from __future__ import annotations

from datetime import timedelta

from adapters.slack.asks import listen_for_presses
from adapters.slack.catchup import catch_up
from adapters.slack.commands import listen_for_commands
from adapters.slack.directory import SlackDirectory
from adapters.slack.glyphs import REACTIONS
from adapters.slack.live import SlackWorkspaceConnections
from adapters.slack.manifest import SECTION, SlackAgent
from adapters.slack.normalise import normalise
from adapters.slack.repeats import REPEATS
from adapters.slack.secrets import SHAPES
from adapters.slack.send import SlackSender
from adapters.slack.webapi import verify
from core.command_answers import Commands
from core.markup import CHAT_MARKUP
from core.outbox import Sender
from core.platform import Platform, RunContext

__all__ = ["DRAFT_LIMIT", "PLATFORM", "READERS_TTL", "SlackConnection"]

READERS_TTL = timedelta(minutes=1)


class SlackConnection:
    """The Slack connections of one workspace's agents and the sender they share."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.connections = SlackWorkspaceConnections.from_workspace(
            ctx.workspace, ctx.receive, environ=ctx.environ
        )
        self._sender = SlackSender(
            ctx.workspace, ctx.environ, lookup=ctx.engine.event, clock=ctx.clock
        )
        # Who may read a conversation's words in `/c2a` answers: asked again after a minute,
        # so someone removed from a private channel soon stops seeing it there.
        readers = SlackDirectory(
            ctx.workspace, self._sender.clients, clock=ctx.clock, ttl=READERS_TTL
        )
        commands = Commands(ctx.engine, ctx.sink)
        for connection in self.connections.connections.values():
            listen_for_presses(connection.app, ctx.engine.approvals)
            listen_for_commands(connection.app, commands, members=readers.members)

    @property
    def sender(self) -> Sender:
        return self._sender

    async def start(self) -> None:
        ctx = self.ctx
        await verify(ctx.workspace, ctx.environ)  # one line per wrong token or scope
        await self._members()
        now = ctx.clock.now()
        await catch_up(ctx.workspace, self._sender.clients, ctx.receive, ctx.store, now=now)
        await self.connections.start()

    async def _members(self) -> None:
        """Which agents are in each channel the manifest configures, asked of Slack once at
        start (cached `conversations.members`), so visibility does not wait for the first
        message through each agent's connection."""
        ctx = self.ctx
        if not ctx.workspace.manifest.channels:
            return
        directory = SlackDirectory(ctx.workspace, self._sender.clients, clock=ctx.clock)
        for channel in ctx.workspace.manifest.channels:
            ctx.engine.note_members(channel, await directory.agents_in(channel))

    def ready(self) -> None:
        return None

    async def close(self) -> None:
        await self.connections.close()

    async def finish(self) -> None:
        await self._sender.close()


def connect(ctx: RunContext) -> SlackConnection | None:
    """Slack for a workspace where an agent has a bot token variable."""
    agents = ctx.workspace.manifest.agents.values()
    if not any((s := SlackAgent.of(c)) and s.bot_token_env for c in agents):
        return None
    return SlackConnection(ctx)


DRAFT_LIMIT = 2_500
"""The most characters a streamed reply's message grows to before it continues in a new one:
its text is cut at `MAX_CHARS` (3,000) once rendered, with room
for what rendering adds (escapes, links)."""

PLATFORM = Platform(
    name="slack",
    normalise=normalise,
    reactions=REACTIONS,
    manifest=SECTION,
    markup=CHAT_MARKUP,
    secrets=SHAPES,
    connect=connect,
    streams_drafts=True,
    draft_limit=DRAFT_LIMIT,
    repeats=REPEATS,
)
