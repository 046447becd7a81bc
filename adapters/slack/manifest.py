"""Slack's part of the workspace manifest: the `slack:` section, each agent's Slack app
(`agents.<id>.slack`), and the user groups that mean a role (`roles.<name>.slack_usergroups`),
read back typed with `SlackWorkspace.of(manifest)` and `SlackAgent.of(agent)`.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from core.manifest_sections import CatchUp, ManifestSection, PlatformAgent, PlatformSettings

__all__ = ["SECTION", "SlackAgent", "SlackCatchUp", "SlackWorkspace"]


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


class SlackWorkspace(PlatformSettings):
    """The Slack workspace, where Slack is, and how far a restart catches up from history."""

    platform: ClassVar[str] = "slack"

    team_id: str = Field(pattern=r"^[TE][A-Z0-9]+$")
    api_url: str | None = None
    catch_up: SlackCatchUp = Field(default_factory=SlackCatchUp)

    def describe(self) -> str:
        return f"slack team {self.team_id}"


SECTION = ManifestSection(
    settings=SlackWorkspace, agent=SlackAgent, role_groups="slack_usergroups", group_word="group"
)
