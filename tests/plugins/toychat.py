"""A toy chat platform, written as a third party would: a separate package that registers
one `core.platform.Platform` under the entry point group `c2a.adapters` and touches nothing of
c2a but the core port. The plugin test copies this file into a temporary package directory
with a `toychat-0.1.dist-info/entry_points.txt` naming it.

Its manifest part: a `toy: {server: ...}` section, each agent's `toy: {user_id: toy-...}`, and
`roles.<name>.toy_groups`. A toy payload is `{"id", "channel", "user", "text", "mentions": [user
ids]}`; its live side is
`ToyConnection.say`, a person writing and a sender that keeps every action it is given.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

from pydantic import Field

from core.actions import Action, Post
from core.events import Author, ChatEvent, Conversation, ConversationKind, EventKind, Mentions
from core.manifest_sections import ManifestSection, PlatformAgent, PlatformSettings
from core.platform import Platform, RunContext
from core.signals import unicode_reactions

NAME = "toy"


class ToySettings(PlatformSettings):
    """The `toy:` section: which toy server."""

    platform: ClassVar[str] = NAME
    server: str = Field(min_length=1)

    def describe(self) -> str:
        return f"toy server {self.server}"


class ToyAgent(PlatformAgent):
    """An agent's toy account."""

    platform: ClassVar[str] = NAME
    user_id: str = Field(pattern=r"^toy-[a-z]+$")


SECTION = ManifestSection(settings=ToySettings, agent=ToyAgent, role_groups="toy_groups")


def normalise(payload: Mapping[str, Any]) -> ChatEvent | None:
    """One toy message as a core event; None for anything else."""
    if payload.get("type") != "message":
        return None
    return ChatEvent(
        event_id=f"{NAME}:{payload['channel']}:{payload['id']}",
        kind=EventKind.MESSAGE,
        platform=NAME,
        workspace_id="toy",
        conversation=Conversation(str(payload["channel"]), ConversationKind.CHANNEL),
        author=Author(str(payload["user"])),
        created_at=datetime.now(UTC),
        message_id=str(payload["id"]),
        text=str(payload.get("text", "")),
        mentions=Mentions(users=tuple(payload.get("mentions", ()))),
    )


class ToySender:
    """Keeps each action; a post gets a fresh message id."""

    def __init__(self) -> None:
        self.actions: list[Action] = []
        self._ids = itertools.count(1000)

    async def send(self, action: Action) -> dict[str, Any]:
        self.actions.append(action)
        match action:
            case Post():
                return {"messageId": str(next(self._ids))}
        return {}

    async def find(self, action: Action) -> dict[str, Any] | None:
        return None


class ToyConnection:
    """The toy platform's live side in one workspace's run."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self._sender = ToySender()
        self.started = False

    @property
    def sender(self) -> ToySender:
        return self._sender

    async def start(self) -> None:
        self.started = True

    def ready(self) -> str | None:
        return None

    async def say(self, payload: Mapping[str, Any]) -> None:
        """A person writes on the toy platform, where every agent is in every channel: each
        agent's connection hands the payload to the run's receive path (one event in the end)."""
        for agent in self.ctx.workspace.agent_ids:
            await self.ctx.receive(NAME, payload, agent)

    async def close(self) -> None:
        self.started = False

    async def finish(self) -> None:
        return None


def connect(ctx: RunContext) -> ToyConnection | None:
    """The toy platform for a workspace whose manifest has a `toy:` section."""
    return ToyConnection(ctx) if ToySettings.of(ctx.workspace.manifest) else None


PLATFORM = Platform(
    name=NAME,
    normalise=normalise,
    reactions=unicode_reactions(),
    manifest=SECTION,
    connect=connect,
)
