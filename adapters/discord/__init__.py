"""The Discord adapter: gateway dispatches in, core events out, through a pure `normalise`."""

from adapters.discord.normalise import normalise

__all__ = ["normalise"]
