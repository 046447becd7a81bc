"""Interactions: what Discord sends a bot when someone presses one of its message's buttons (a
component interaction) or runs one of its application commands, taken from discord.py here and
nowhere else.

Every bot's client hands each `INTERACTION_CREATE` discord.py has parsed (`on_interaction`) to
its connection, which hands it to the workspace's `Interactions`. A component goes to the
handler of the longest `custom_id` prefix it starts with, an application command to the
handler of its name; anything else is left unanswered (Discord then shows the person that the
interaction failed) and logged. A handler that raises is logged in one line; the connection
goes on. A handler must answer within Discord's three seconds (a deferral will do).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

import discord

__all__ = ["Handler", "Interactions", "field"]

log = logging.getLogger(__name__)

Handler = Callable[[discord.Interaction], Awaitable[None]]


def field(interaction: discord.Interaction, name: str) -> str:
    """A string of the interaction's `data` (`custom_id`, `name`); "" when it has none."""
    data: Mapping[str, object] = interaction.data or {}
    value = data.get(name)
    return value if isinstance(value, str) else ""


class Interactions:
    """Routes a workspace's interactions, whichever of its bots received them."""

    def __init__(self) -> None:
        self._components: dict[str, Handler] = {}  # custom_id prefix -> handler
        self._commands: dict[str, Handler] = {}  # application command name -> handler

    def on_component(self, prefix: str, handler: Handler) -> None:
        """Hand presses of components whose `custom_id` starts with `prefix` to `handler`."""
        self._components[prefix] = handler

    def on_command(self, name: str, handler: Handler) -> None:
        """Hand the application command `name` to `handler`."""
        self._commands[name] = handler

    def handler_for(self, interaction: discord.Interaction) -> Handler | None:
        """Who handles `interaction`, or None when nobody does."""
        if interaction.type is discord.InteractionType.component:
            custom_id = field(interaction, "custom_id")
            prefixes = [p for p in self._components if custom_id.startswith(p)]
            return self._components[max(prefixes, key=len)] if prefixes else None
        if interaction.type is discord.InteractionType.application_command:
            return self._commands.get(field(interaction, "name"))
        return None

    async def take(self, agent: str, interaction: discord.Interaction) -> None:
        """Handle one interaction `agent`'s bot received (see the module doc)."""
        handler = self.handler_for(interaction)
        if handler is None:
            log.info(
                "discord agent %s: interaction %s (%s) has no handler",
                agent,
                interaction.id,
                interaction.type.name,
            )
            return
        try:
            await handler(interaction)
        except Exception as exc:
            log.error(
                "discord agent %s: interaction %s failed: %s: %s",
                agent,
                interaction.id,
                type(exc).__name__,
                exc,
            )
