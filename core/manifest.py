"""The workspace manifest: its YAML schema, loading with errors a person can act on, and lookups.

A manifest names the agents, their platform identities and roles, and per-channel overrides.
It never holds a token, only the names of the environment variables that do. Every key is
checked: a misspelt key is an error, not a silently ignored setting.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from core.errors import ManifestError
from core.store_choice import StoreSetting
from core.yaml_safe import key_path, read_yaml

__all__ = [
    "AgentConfig",
    "AttentionSettings",
    "ChannelConfig",
    "Manifest",
    "WebchatWorkspace",
    "Workspace",
    "load_manifest",
    "parse_manifest",
]

AGENT_ID = r"^[a-z0-9][a-z0-9_-]{0,62}$"
AmbientMode = Literal["tool_mailbox", "digest", "silent"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SlackAgent(_Strict):
    """An agent's Slack app: its bot user, and where `c2a run` finds its tokens."""

    user_id: str = Field(pattern=r"^[UW][A-Z0-9]+$")
    bot_id: str | None = Field(default=None, pattern=r"^B[A-Z0-9]+$")
    bot_token_env: str | None = None
    app_token_env: str | None = None
    signing_secret_env: str | None = None


class DiscordAgent(_Strict):
    """An agent's Discord bot: its user id, its managed role, and its token's variable."""

    user_id: str = Field(pattern=r"^[0-9]{5,20}$")
    role_id: str | None = Field(default=None, pattern=r"^[0-9]{5,20}$")
    application_id: str | None = Field(default=None, pattern=r"^[0-9]{5,20}$")
    token_env: str | None = None


class Access(_Strict):
    """Who may trigger an agent: platform user ids, or `*` for everyone in the organisation."""

    dm: list[str] | Literal["*"] = "*"
    mention: list[str] | Literal["*"] = "*"
    external: bool = False


class Budget(_Strict):
    """Full model turns one person may cause one agent within a sliding window."""

    turns: int = Field(default=30, ge=1)
    window_s: int = Field(default=3600, ge=1)


class HarnessConfig(BaseModel):
    """Which backend answers for the agent (`backend`, found by name), and its settings,
    which the backend itself validates (docs/harnesses.md)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    backend: str = Field(min_length=1)

    @field_validator("backend")
    @classmethod
    def _installed(cls, name: str, info: ValidationInfo) -> str:
        known = (info.context or {}).get("backends")
        if known is not None and name not in known:
            raise ValueError(
                f"unknown backend {name!r}; installed: {', '.join(sorted(known)) or 'none'}"
            )
        return name

    def settings(self) -> dict[str, Any]:
        return self.model_dump()


class AgentConfig(_Strict):
    """One agent of the workspace."""

    lead: bool = False
    harness: HarnessConfig | None = None
    slack: SlackAgent | None = None
    discord: DiscordAgent | None = None
    roles: list[str] = Field(default_factory=list)
    access: Access | None = None
    budget: Budget | None = None
    # Short names people type for the agent in chat text (`ikonia:`, `@iko`), any case.
    names: list[Annotated[str, Field(min_length=1, max_length=64, pattern=r"^\S+$")]] = Field(
        default_factory=list, max_length=32
    )


class RoleConfig(_Strict):
    """Which Slack user groups and Discord roles mean this role's agents."""

    slack_usergroups: list[str] = Field(default_factory=list)
    discord_roles: list[str] = Field(default_factory=list)


class ChannelAgent(_Strict):
    """One agent's settings in one channel."""

    ambient_mode: AmbientMode | None = None
    mute: bool = False


class ChannelConfig(_Strict):
    """Overrides for one conversation (channel id)."""

    broadcast: Literal["ambient", "select"] = "ambient"
    ambient_mode: AmbientMode = "tool_mailbox"
    reply_in_thread: bool = True
    agents: dict[str, ChannelAgent] = Field(default_factory=dict)


class DiscordCatchUp(_Strict):
    """How far back a restart reads Discord's history when its gateway session cannot be
    resumed: per channel, thread and DM, messages at most `minutes` old and at most the newest
    `messages` of them; older ones are logged as missed, not answered. 0 turns it off."""

    minutes: int = Field(default=30, ge=0, le=7 * 24 * 60, strict=True)
    messages: int = Field(default=300, ge=0, le=10_000, strict=True)


class SlackCatchUp(DiscordCatchUp):
    """How far back a restart after an earlier run reads Slack's history (Slack itself sends
    an unacknowledged event again only for about an hour): per channel, thread and DM, messages
    at most `minutes` old and at most the newest `messages` of them; older ones are logged as
    missed, not answered. 0 turns it off. The same shape and defaults as Discord's."""


class SlackWorkspace(_Strict):
    """The Slack workspace, where Slack is, and how far a restart catches up from history."""

    team_id: str = Field(pattern=r"^[TE][A-Z0-9]+$")
    api_url: str | None = None
    catch_up: SlackCatchUp = Field(default_factory=SlackCatchUp)


class DiscordWorkspace(_Strict):
    """The Discord server, where Discord is, how the agents' bots shard their gateway, and how
    far a restart catches up from history (`catch_up`).

    Without `shard_count` each bot has one plain gateway connection. `shard_count: auto` asks
    Discord for its recommended count; a number fixes it, and `shard_ids` then picks which of
    those shards this process runs (all of them when absent). A guild's events travel on shard
    `(guild_id >> 22) % shard_count`, so `shard_ids` must include that one.
    """

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


class WebchatWorkspace(_Strict):
    """The local web chat (`adapters/webchat`): where its page listens, its channels, the
    people who can use it, and the pages of other origins that may open its websocket.
    Everyone in it, people and agents, is in every channel."""

    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=8765, ge=0, le=65535)
    channels: list[Annotated[str, Field(pattern=AGENT_ID)]] = Field(
        default_factory=lambda: ["general"], min_length=1
    )
    humans: list[Annotated[str, Field(pattern=AGENT_ID)]] = Field(
        default_factory=lambda: ["you"], min_length=1
    )
    allowed_origins: list[str] = Field(default_factory=list)

    @field_validator("allowed_origins")
    @classmethod
    def _origins(cls, origins: list[str]) -> list[str]:
        """Each an origin as a browser sends it (`https://tools.example:8443`), kept in that
        canonical form: lowercase, without a default port."""
        return [_origin(text) for text in origins]


def _origin(text: str) -> str:
    problem = f"{text!r} is not an origin; write scheme://host[:port], with no path"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise ValueError(problem) from None
    extra = parts.path.strip("/") or parts.query or parts.fragment or "@" in parts.netloc
    if parts.scheme not in ("http", "https") or not parts.hostname or extra:
        raise ValueError(problem)
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    default = 80 if parts.scheme == "http" else 443
    return f"{parts.scheme}://{host}" + (f":{port}" if port not in (None, default) else "")


class AttentionSettings(_Strict):
    """The engine's numbers; the defaults are documented in docs/attention.md."""

    merge_window_ms: int = Field(default=30_000, ge=0)
    deadline_ms: int = Field(default=300_000, ge=1)
    loop_rounds: int = Field(default=4, ge=1)
    claim_ttl_ms: int = Field(default=600_000, ge=1)
    selection: Literal["least_busy", "order"] = "least_busy"
    seen_signal: bool = True
    notice_after_ms: int = Field(default=120_000, ge=0)
    digest_period_ms: int = Field(default=900_000, ge=1000)
    sends_per_minute: int = Field(default=10, ge=1)


class IntentOverride(_Strict):
    add: list[str] = Field(default_factory=list)
    remove: list[str] = Field(default_factory=list)
    patterns_add: list[str] = Field(default_factory=list)


class Manifest(_Strict):
    """A whole workspace manifest (version 1)."""

    version: Literal[1]
    workspace: str = Field(min_length=1)
    store: StoreSetting | None = None
    slack: SlackWorkspace | None = None
    discord: DiscordWorkspace | None = None
    webchat: WebchatWorkspace | None = None
    agents: dict[str, AgentConfig] = Field(min_length=1)
    roles: dict[str, RoleConfig] = Field(default_factory=dict)
    channels: dict[str, ChannelConfig] = Field(default_factory=dict)
    attention: AttentionSettings = Field(default_factory=AttentionSettings)
    trusted_bots: list[str] = Field(default_factory=list)
    access: Access = Field(default_factory=Access)
    budget: Budget = Field(default_factory=Budget)
    intent: dict[str, IntentOverride] = Field(default_factory=dict)
    signals: dict[str, dict[str, str]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _references_resolve(self) -> Manifest:
        import re

        for agent_id, agent in self.agents.items():
            if not re.match(AGENT_ID, agent_id):
                raise ValueError(
                    f"agent id {agent_id!r} must be lowercase letters, digits, '-' or '_'"
                )
            for role in agent.roles:
                if role not in self.roles:
                    raise ValueError(f"agent {agent_id!r} has role {role!r}, which roles: lacks")
        leads = [name for name, agent in self.agents.items() if agent.lead]
        if len(leads) > 1:
            raise ValueError(f"only one agent may be lead, found {', '.join(leads)}")
        if self.webchat is not None:
            taken = sorted(set(self.webchat.humans) & set(self.agents))
            if taken:
                raise ValueError(f"webchat.humans {taken} are agent ids; name people otherwise")
        for channel_id, channel in self.channels.items():
            for agent_id in channel.agents:
                if agent_id not in self.agents:
                    raise ValueError(f"channels.{channel_id} names unknown agent {agent_id!r}")
        return self


def parse_manifest(
    data: Any, source: str = "<manifest>", *, backends: Collection[str] | None = None
) -> Manifest:
    """Validate already-parsed YAML; raises ManifestError naming source, key path and problem.
    With `backends` (the installed harness backends' names), each agent's must be one of them."""
    if not isinstance(data, Mapping):
        raise ManifestError(f"{source}: a manifest must be a mapping of keys", {"file": source})
    try:
        return Manifest.model_validate(data, context={"backends": backends})
    except ValidationError as exc:
        problems = [_describe(source, error) for error in exc.errors()]
        raise ManifestError(
            "\n".join(problems), {"file": source, "errors": len(problems)}
        ) from None


def load_manifest(path: str | Path, *, backends: Collection[str] | None = None) -> Manifest:
    """Read and validate a manifest file (core/yaml_safe.py bounds the reading); raises
    ManifestError for every problem a person makes. `backends` as for `parse_manifest`."""
    return parse_manifest(read_yaml(path), str(path), backends=backends)


def _describe(source: str, error: Mapping[str, Any]) -> str:
    path = key_path(error["loc"])
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"{source}: {path}: unknown key"
    if kind == "missing":
        return f"{source}: {path}: required key is missing"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{source}: {path}: {message}"


@dataclass(frozen=True, slots=True)
class Workspace:
    """A validated manifest with the lookups the engine needs, computed once."""

    manifest: Manifest
    agent_ids: tuple[str, ...]
    lead: str
    by_user: Mapping[tuple[str, str], str]
    roles_by_group: Mapping[tuple[str, str], tuple[str, ...]]
    agents_by_role: Mapping[str, tuple[str, ...]]

    @classmethod
    def from_manifest(cls, manifest: Manifest) -> Workspace:
        agent_ids = tuple(manifest.agents)
        lead = next((name for name, a in manifest.agents.items() if a.lead), agent_ids[0])
        by_user: dict[tuple[str, str], str] = {}
        for name, agent in manifest.agents.items():
            if agent.slack:
                by_user["slack", agent.slack.user_id] = name
                if agent.slack.bot_id:
                    by_user["slack", agent.slack.bot_id] = name
            if agent.discord:
                by_user["discord", agent.discord.user_id] = name
            by_user["webchat", name] = name
        groups: dict[tuple[str, str], list[str]] = {}
        for role, config in manifest.roles.items():
            for group in config.slack_usergroups:
                groups.setdefault(("slack", group), []).append(role)
            for group in config.discord_roles:
                groups.setdefault(("discord", group), []).append(role)
            groups["webchat", role] = [role]  # the web chat mentions a role by its own name
        agents_by_role = {
            role: tuple(name for name, a in manifest.agents.items() if role in a.roles)
            for role in manifest.roles
        }
        return cls(
            manifest=manifest,
            agent_ids=agent_ids,
            lead=lead,
            by_user=by_user,
            roles_by_group={key: tuple(value) for key, value in groups.items()},
            agents_by_role=agents_by_role,
        )

    @property
    def settings(self) -> AttentionSettings:
        return self.manifest.attention

    def agent_for(self, platform: str, user_id: str | None) -> str | None:
        """The agent bound to a platform user id, if any."""
        if user_id is None:
            return None
        return self.by_user.get((platform, user_id))

    def user_id(self, platform: str, agent: str) -> str | None:
        """The agent's own platform user id."""
        config = self.manifest.agents[agent]
        if platform == "slack":
            return config.slack.user_id if config.slack else None
        if platform == "discord":
            return config.discord.user_id if config.discord else None
        return agent

    def managed_role(self, platform: str, agent: str) -> str | None:
        """The platform role that stands for this one agent (a Discord bot's managed role)."""
        config = self.manifest.agents[agent].discord
        return config.role_id if platform == "discord" and config else None

    def roles_named(self, platform: str, groups: Sequence[str]) -> tuple[str, ...]:
        """The manifest roles that a message's role or user-group mentions stand for."""
        found: list[str] = []
        for group in groups:
            for role in self.roles_by_group.get((platform, group), ()):
                if role not in found:
                    found.append(role)
        return tuple(found)

    def channel(self, conversation_id: str) -> ChannelConfig:
        return self.manifest.channels.get(conversation_id) or _DEFAULT_CHANNEL

    def trusted_bot(self, user_id: str) -> bool:
        return user_id in self.manifest.trusted_bots

    def access(self, agent: str) -> Access:
        return self.manifest.agents[agent].access or self.manifest.access

    def budget(self, agent: str) -> Budget:
        return self.manifest.agents[agent].budget or self.manifest.budget

    def describe(self) -> list[str]:
        """What `c2a check` prints: one line per thing understood."""
        m = self.manifest
        lines = [f"workspace {m.workspace} (manifest version {m.version})"]
        if m.slack:
            lines.append(f"slack team {m.slack.team_id}")
        if m.discord:
            lines.append(f"discord guild {m.discord.guild_id}")
        if m.webchat:
            w = m.webchat
            lines.append(
                f"webchat on http://{w.host}:{w.port}/: channels {', '.join(w.channels)}; "
                f"people {', '.join(w.humans)}"
            )
        for name, agent in m.agents.items():
            ids = []
            if agent.slack:
                ids.append(f"slack {agent.slack.user_id}")
            if agent.discord:
                ids.append(f"discord {agent.discord.user_id}")
            lead = " (lead: escalations go here)" if name == self.lead else ""
            roles = f"; roles {', '.join(agent.roles)}" if agent.roles else ""
            harness = f"; harness {agent.harness.backend}" if agent.harness else ""
            lines.append(f"agent {name}{lead}: {', '.join(ids) or 'webchat only'}{roles}{harness}")
        for role, config in m.roles.items():
            groups = [f"slack group {g}" for g in config.slack_usergroups]
            groups += [f"discord role {g}" for g in config.discord_roles]
            members = ", ".join(self.agents_by_role[role]) or "no agents"
            lines.append(f"role {role}: {', '.join(groups) or 'no platform groups'} -> {members}")
        for channel_id, channel in m.channels.items():
            lines.append(
                f"channel {channel_id}: broadcast {channel.broadcast}, "
                f"unaddressed messages as {channel.ambient_mode}"
            )
        s = m.attention
        lines.append(
            f"attention: fragments merge for {s.merge_window_ms} ms, must_respond deadline "
            f"{s.deadline_ms} ms, loop limit {s.loop_rounds} agent messages, "
            f"role selection {s.selection}"
        )
        return lines


_DEFAULT_CHANNEL = ChannelConfig()
