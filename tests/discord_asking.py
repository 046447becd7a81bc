"""A fake Discord guild for tests of approvals on Discord: the team's three bots, two people
(`ANA` holds the backend role, `BEN` nothing) and #general; the bots' real discord.py sender;
and the lead's live bot, whose interactions go to the `Interactions` given."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from builders import D_BACKEND_ROLE, D_HUMAN, D_HUMAN2, DISCORD_IDS, GUILD
from fakes.discord import FakeDiscord

from adapters.discord.interactions import Interactions
from adapters.discord.live import DiscordAgentConnection
from adapters.discord.send import DiscordSender
from core.clock import VirtualClock
from core.manifest import Workspace

__all__ = ["ANA", "APPLICATIONS", "BEN", "CHANNEL", "ENV", "TOKENS", "lead_on_discord"]

CHANNEL = "820000000000000001"
ANA, BEN = D_HUMAN, D_HUMAN2
TOKENS = {agent: f"{agent}-token-not-a-secret" for agent in DISCORD_IDS}
APPLICATIONS = {agent: f"91000000000000000{n}" for n, agent in enumerate(DISCORD_IDS, 1)}
ENV = {
    "DISCORD_LEAD_TOKEN": TOKENS["lead"],
    "DISCORD_W1_TOKEN": TOKENS["worker-1"],
    "DISCORD_W2_TOKEN": TOKENS["worker-2"],
}


async def _nothing(*_: Any) -> None:
    return None


@contextlib.asynccontextmanager
async def lead_on_discord(
    monkeypatch: pytest.MonkeyPatch,
    workspace: Workspace,
    interactions: Interactions,
    fake_type: type[FakeDiscord] = FakeDiscord,
) -> AsyncIterator[tuple[FakeDiscord, DiscordSender]]:
    """The fake guild (a `fake_type`), the sender of `workspace`'s bots and the lead's live
    bot, ready."""
    async with fake_type(guild_id=GUILD) as fake:
        fake.patch(monkeypatch)
        for agent, user_id in DISCORD_IDS.items():
            fake.add_bot(TOKENS[agent], user_id, agent, APPLICATIONS[agent])
        fake.add_role(D_BACKEND_ROLE, "backend")
        fake.add_member(ANA, "ada.l", roles=(D_BACKEND_ROLE,))
        fake.add_member(BEN, "ben.b")
        fake.add_channel(CHANNEL, "general")
        sender = await DiscordSender.connect(workspace, environ=ENV, backoff=0)
        connection = DiscordAgentConnection(
            "lead",
            TOKENS["lead"],
            _nothing,
            guild_ready_timeout=0.05,
            clock=VirtualClock(),
            interactions=interactions,
        )
        connection.start()
        try:
            await connection.wait_ready()
            yield fake, sender
        finally:
            await connection.close()
            await sender.close()
