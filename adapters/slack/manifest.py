"""Slack's part of the workspace manifest: the `slack:` section, each agent's Slack app
(`agents.<id>.slack`), and the user groups that mean a role (`roles.<name>.slack_usergroups`),
read back typed with `SlackWorkspace.of(manifest)` and `SlackAgent.of(agent)`.

`slack.mode` chooses how the workspace's agents receive: `socket` (the default: Socket Mode,
an outbound websocket per agent, each needing `app_token_env`) or `http` (the Events API:
`c2a run` listens on `slack.listen` and serves each agent at `/slack/events/<agent>`, each
needing `signing_secret_env`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from core.manifest_sections import (
    CatchUp,
    ManifestSection,
    PlatformAgent,
    PlatformSettings,
    Strict,
)

__all__ = ["SECTION", "Mode", "SlackAgent", "SlackCatchUp", "SlackListen", "SlackWorkspace"]

Mode = Literal["socket", "http"]


class SlackAgent(PlatformAgent):
    """An agent's Slack app: its bot user, and where `c2a run` finds its tokens."""

    platform: ClassVar[str] = "slack"

    user_id: str = Field(pattern=r"^[UW][A-Z0-9]+$")
    bot_id: str | None = Field(default=None, pattern=r"^B[A-Z0-9]+$")
    bot_token_env: str | None = None
    app_token_env: str | None = None
    signing_secret_env: str | None = None

    def other_ids(self) -> tuple[str, ...]:
        """The app's bot id: Slack names the bot by it on some events."""
        return (self.bot_id,) if self.bot_id else ()


class SlackCatchUp(CatchUp):
    """How far back a restart after an earlier run reads Slack's history (Slack itself sends
    an unacknowledged event again only for about an hour): per channel, thread and DM, messages
    at most `minutes` old and at most the newest `messages` of them; older ones are logged as
    missed, not answered. 0 turns it off. The same shape and defaults as Discord's."""


class SlackListen(Strict):
    """Where `c2a run` serves the Events API in HTTP mode: an address and a port (0: any free
    one, for tests). Slack reaches it through the public URL in each app's settings, usually
    by way of a reverse proxy that ends TLS."""

    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=3000, ge=0, le=65535)


class SlackWorkspace(PlatformSettings):
    """The Slack workspace, where Slack is, how its agents receive (`mode`, and `listen` for
    HTTP), and how far a restart catches up from history."""

    platform: ClassVar[str] = "slack"

    team_id: str = Field(pattern=r"^[TE][A-Z0-9]+$")
    api_url: str | None = None
    mode: Mode = "socket"
    listen: SlackListen = Field(default_factory=SlackListen)
    catch_up: SlackCatchUp = Field(default_factory=SlackCatchUp)

    def describe(self) -> str:
        if self.mode == "http":
            where = f"the Events API on {self.listen.host}:{self.listen.port}"
            return f"slack team {self.team_id}, receiving over {where}"
        return f"slack team {self.team_id}"


SECTION = ManifestSection(
    settings=SlackWorkspace, agent=SlackAgent, role_groups="slack_usergroups", group_word="group"
)
