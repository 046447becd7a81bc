"""Discord's part of the workspace manifest: the `discord:` section (the server, its endpoints,
gateway sharding and catch-up), each agent's bot (`agents.<id>.discord`), and the Discord roles
that mean a role (`roles.<name>.discord_roles`), read back typed with
`DiscordWorkspace.of(manifest)` and `DiscordAgent.of(agent)`.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from core.manifest_sections import CatchUp, ManifestSection, PlatformAgent, PlatformSettings

__all__ = ["SECTION", "DiscordAgent", "DiscordCatchUp", "DiscordWorkspace"]


class DiscordAgent(PlatformAgent):
    """An agent's Discord bot: its user id, its managed role, and its token's variable."""

    platform: ClassVar[str] = "discord"

    user_id: str = Field(pattern=r"^[0-9]{5,20}$")
    role_id: str | None = Field(default=None, pattern=r"^[0-9]{5,20}$")
    application_id: str | None = Field(default=None, pattern=r"^[0-9]{5,20}$")
    token_env: str | None = None

    def managed_role(self) -> str | None:
        """The role Discord made for this bot alone: mentioning it means the agent."""
        return self.role_id


class DiscordCatchUp(CatchUp):
    """How far back a restart reads Discord's history when its gateway session cannot be
    resumed: per channel, thread and DM, messages at most `minutes` old and at most the newest
    `messages` of them; older ones are logged as missed, not answered. 0 turns it off."""


class DiscordWorkspace(PlatformSettings):
    """The Discord server, where Discord is, how the agents' bots shard their gateway, and how
    far a restart catches up from history (`catch_up`).

    Without `shard_count` each bot has one plain gateway connection. `shard_count: auto` asks
    Discord for its recommended count; a number fixes it, and `shard_ids` then picks which of
    those shards this process runs (all of them when absent). A guild's events travel on shard
    `(guild_id >> 22) % shard_count`, so `shard_ids` must include that one.
    """

    platform: ClassVar[str] = "discord"

    guild_id: str = Field(pattern=r"^[0-9]{5,20}$")
    api_url: str | None = None
    gateway_url: str | None = None
    shard_count: int | Literal["auto"] | None = None
    shard_ids: list[Annotated[int, Field(ge=0, strict=True)]] | None = Field(
        default=None, min_length=1
    )
    catch_up: DiscordCatchUp = Field(default_factory=DiscordCatchUp)

    @field_validator("shard_count", mode="before")
    @classmethod
    def _count_or_auto(cls, value: object) -> object:
        if value is None or value == "auto" or (type(value) is int and value >= 1):
            return value
        raise ValueError(f"must be a whole number of at least 1, or auto, not {value!r}")

    @model_validator(mode="after")
    def _shards_fit(self) -> DiscordWorkspace:
        if self.shard_ids is None:
            return self
        if not isinstance(self.shard_count, int):
            raise ValueError(
                "shard_ids needs shard_count set to a number: shard ids count from 0 to "
                "shard_count - 1"
            )
        count = self.shard_count
        outside = [i for i in self.shard_ids if i >= count]
        if outside:
            raise ValueError(f"shard_ids {outside} are not below shard_count {count}")
        if len(set(self.shard_ids)) != len(self.shard_ids):
            raise ValueError(f"shard_ids {self.shard_ids} name a shard more than once")
        guild_shard = (int(self.guild_id) >> 22) % count
        if guild_shard not in self.shard_ids:
            raise ValueError(
                f"shard_ids {self.shard_ids} leave out shard {guild_shard}, which carries every "
                f"event of guild {self.guild_id} ((guild_id >> 22) % {count}): add it"
            )
        return self

    def describe(self) -> str:
        return f"discord guild {self.guild_id}"


SECTION = ManifestSection(
    settings=DiscordWorkspace, agent=DiscordAgent, role_groups="discord_roles", group_word="role"
)
