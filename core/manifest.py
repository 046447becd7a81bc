"""The workspace manifest: its YAML schema, loading with errors a person can act on, and lookups.

A manifest names the agents, their platform identities and roles, and per-channel overrides.
It never holds a token, only the names of the environment variables that do. Every key is
checked: a misspelt key is an error, not a silently ignored setting.

The platform parts (a platform's own section, each agent's identity on it, the key listing its
groups under a role) belong to the adapters (`core.manifest_sections`): `parse_manifest` adds
those of the platforms it is given to the schema under each platform's name, and `Workspace`
indexes identities per platform without knowing any.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from core.errors import ManifestError
from core.manifest_sections import ManifestSection, PlatformSettings
from core.manifest_sections import Strict as _Strict
from core.platform import Platform
from core.redact import SecretShape
from core.signals import GlyphMap, glyph_map
from core.yaml_safe import key_path, read_yaml

__all__ = [
    "AGENT_ID",
    "AgentConfig",
    "AttentionSettings",
    "ChannelConfig",
    "Manifest",
    "RoleConfig",
    "Workspace",
    "load_manifest",
    "manifest_model",
    "parse_manifest",
]

AGENT_ID = r"^[a-z0-9][a-z0-9_-]{0,62}$"
AmbientMode = Literal["tool_mailbox", "digest", "silent"]
_Part = TypeVar("_Part", bound=BaseModel)


def _part(
    model: BaseModel, names: frozenset[str], platform: str, kind: type[_Part]
) -> _Part | None:
    found = getattr(model, platform, None) if platform in names else None
    return found if isinstance(found, kind) else None


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
    """One agent of the workspace; its identity on each platform is `section(platform, ...)`."""

    platform_names: ClassVar[frozenset[str]] = frozenset()

    lead: bool = False
    harness: HarnessConfig | None = None
    roles: list[str] = Field(default_factory=list)
    access: Access | None = None
    budget: Budget | None = None
    # Short names people type for the agent in chat text (`ikonia:`, `@iko`), any case.
    names: list[Annotated[str, Field(min_length=1, max_length=64, pattern=r"^\S+$")]] = Field(
        default_factory=list, max_length=32
    )

    def section(self, platform: str, kind: type[_Part]) -> _Part | None:
        """The agent's identity on `platform` as the adapter's model `kind`; None if absent."""
        return _part(self, self.platform_names, platform, kind)


class RoleConfig(_Strict):
    """Which platform groups (user groups, roles) mean this role's agents: each platform's
    own key lists them (`ManifestSection.role_groups`)."""

    group_keys: ClassVar[frozenset[str]] = frozenset()

    def groups(self, key: str) -> list[str]:
        """The group ids listed under `key`; empty for a key no platform brings."""
        return list(getattr(self, key, ())) if key in self.group_keys else []


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
    """A whole workspace manifest (version 1); a platform's own section is `section(...)`."""

    platform_names: ClassVar[frozenset[str]] = frozenset()
    platform_checks: ClassVar[tuple[Callable[[Any], None], ...]] = ()

    version: Literal[1]
    workspace: str = Field(min_length=1)
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
        for check in self.platform_checks:
            check(self)
        for channel_id, channel in self.channels.items():
            for agent_id in channel.agents:
                if agent_id not in self.agents:
                    raise ValueError(f"channels.{channel_id} names unknown agent {agent_id!r}")
        return self

    def section(self, platform: str, kind: type[_Part]) -> _Part | None:
        """`platform`'s own section as the adapter's model `kind`; None when absent."""
        return _part(self, self.platform_names, platform, kind)


def manifest_model(platforms: Mapping[str, Platform] | None = None) -> type[Manifest]:
    """The manifest schema with the sections of `platforms` (none: core's keys only)."""
    return _schema(tuple((name, p.manifest) for name, p in (platforms or {}).items()))


@functools.cache
def _schema(sections: tuple[tuple[str, ManifestSection], ...]) -> type[Manifest]:
    if not sections:
        return Manifest
    names = frozenset(name for name, _ in sections)
    taken = names & (Manifest.model_fields.keys() | AgentConfig.model_fields.keys())
    if taken:
        raise ValueError(f"platform names {sorted(taken)} are manifest keys already")
    for name, section in sections:
        for model in (section.settings, section.agent):
            if model is not None and model.platform != name:
                raise ValueError(f"{model.__name__} is read under {model.platform!r}, not {name!r}")
    agent = _extend(
        AgentConfig,
        {name: (s.agent | None, None) for name, s in sections if s.agent is not None},
        platform_names=names,
    )
    role = _extend(
        RoleConfig,
        {
            s.role_groups: (list[str], Field(default_factory=list))
            for _, s in sections
            if s.role_groups
        },
        group_keys=frozenset(s.role_groups for _, s in sections if s.role_groups),
    )
    fields: dict[str, Any] = {
        name: (s.settings | None, None) for name, s in sections if s.settings is not None
    }
    fields["agents"] = (dict[str, agent], Field(min_length=1))  # type: ignore[valid-type]
    fields["roles"] = (dict[str, role], Field(default_factory=dict))  # type: ignore[valid-type]
    checks = tuple(s.check for _, s in sections if s.check is not None)
    return _extend(Manifest, fields, platform_names=names, platform_checks=checks)


_Model = TypeVar("_Model", bound=BaseModel)


def _extend(base: type[_Model], fields: dict[str, Any], **class_vars: Any) -> type[_Model]:
    """`base` with more fields (each `(type, default)`), and its class variables set."""
    model = cast("type[_Model]", create_model(base.__name__, __base__=base, **fields))
    for name, value in class_vars.items():
        setattr(model, name, value)
    return model


def parse_manifest(
    data: Any,
    source: str = "<manifest>",
    *,
    backends: Collection[str] | None = None,
    platforms: Mapping[str, Platform] | None = None,
) -> Manifest:
    """Validate already-parsed YAML; raises ManifestError naming source, key path and problem.
    With `backends` (the installed harness backends' names), each agent's must be one of them;
    `platforms` (the installed adapters, `c2a.platforms`) bring their sections."""
    if not isinstance(data, Mapping):
        raise ManifestError(f"{source}: a manifest must be a mapping of keys", {"file": source})
    try:
        return manifest_model(platforms).model_validate(data, context={"backends": backends})
    except ValidationError as exc:
        problems = [_describe(source, error) for error in exc.errors()]
        raise ManifestError(
            "\n".join(problems), {"file": source, "errors": len(problems)}
        ) from None


def load_manifest(
    path: str | Path,
    *,
    backends: Collection[str] | None = None,
    platforms: Mapping[str, Platform] | None = None,
) -> Manifest:
    """Read and validate a manifest file (core/yaml_safe.py bounds the reading); raises
    ManifestError for every problem a person makes. `backends` and `platforms` as for
    `parse_manifest`."""
    return parse_manifest(read_yaml(path), str(path), backends=backends, platforms=platforms)


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
    """A validated manifest with the lookups the engine needs, computed once.

    `by_user` maps (platform, user id) to the agent; `roles_by_group` (platform, group id) to
    the roles it stands for; `sections` is what each platform adds to the manifest, `glyphs`
    its reactions, and `secrets` the shapes of its secrets, for every redactor built for it."""

    manifest: Manifest
    agent_ids: tuple[str, ...]
    lead: str
    by_user: Mapping[tuple[str, str], str]
    roles_by_group: Mapping[tuple[str, str], tuple[str, ...]]
    agents_by_role: Mapping[str, tuple[str, ...]]
    glyphs: GlyphMap
    sections: Mapping[str, ManifestSection]
    secrets: tuple[SecretShape, ...] = ()

    @classmethod
    def from_manifest(
        cls, manifest: Manifest, platforms: Mapping[str, Platform] | None = None
    ) -> Workspace:
        """The lookups of `manifest` for the installed `platforms` (the composition root loads
        them, `c2a.platforms`); raises ValueError on a `signals:` override they refuse."""
        platforms = platforms or {}
        sections = {name: platform.manifest for name, platform in platforms.items()}
        agent_ids = tuple(manifest.agents)
        lead = next((name for name, a in manifest.agents.items() if a.lead), agent_ids[0])
        by_user: dict[tuple[str, str], str] = {}
        for name, agent in manifest.agents.items():
            for platform, section in sections.items():
                if section.agent is None:
                    by_user[platform, name] = name  # agents are named by their ids there
                    continue
                identity = agent.section(platform, section.agent)
                if identity is not None:
                    for user_id in (identity.user_id, *identity.other_ids()):
                        by_user[platform, user_id] = name
        groups: dict[tuple[str, str], list[str]] = {}
        for role, config in manifest.roles.items():
            for platform, section in sections.items():
                if section.role_groups is not None:
                    for group in config.groups(section.role_groups):
                        groups.setdefault((platform, group), []).append(role)
                elif section.agent is None:
                    groups[platform, role] = [role]  # a role is mentioned by its own name
        agents_by_role = {
            role: tuple(name for name, a in manifest.agents.items() if role in a.roles)
            for role in manifest.roles
        }
        reactions = {name: platform.reactions for name, platform in platforms.items()}
        return cls(
            manifest=manifest,
            agent_ids=agent_ids,
            lead=lead,
            by_user=by_user,
            roles_by_group={key: tuple(value) for key, value in groups.items()},
            agents_by_role=agents_by_role,
            glyphs=glyph_map(reactions, manifest.signals),
            sections=sections,
            secrets=tuple(shape for p in platforms.values() for shape in p.secrets),
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
        """The agent's own platform user id: its id where agents are named by their ids."""
        section = self.sections.get(platform)
        if section is None or section.agent is None:
            return agent
        identity = self.manifest.agents[agent].section(platform, section.agent)
        return identity.user_id if identity is not None else None

    def managed_role(self, platform: str, agent: str) -> str | None:
        """The platform role that stands for this one agent (a bot's managed role)."""
        section = self.sections.get(platform)
        if section is None or section.agent is None:
            return None
        identity = self.manifest.agents[agent].section(platform, section.agent)
        return identity.managed_role() if identity is not None else None

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
        for platform in self.sections:
            settings = m.section(platform, PlatformSettings)
            if settings is not None:
                lines.append(settings.describe())
        by_name = " or ".join(p for p, s in self.sections.items() if s.agent is None)
        for name, agent in m.agents.items():
            ids = []
            for platform, section in self.sections.items():
                identity = agent.section(platform, section.agent) if section.agent else None
                if identity is not None:
                    ids.append(f"{platform} {identity.user_id}")
            lead = " (lead: escalations go here)" if name == self.lead else ""
            roles = f"; roles {', '.join(agent.roles)}" if agent.roles else ""
            harness = f"; harness {agent.harness.backend}" if agent.harness else ""
            only = f"{by_name} only" if by_name else "no platform ids"
            lines.append(f"agent {name}{lead}: {', '.join(ids) or only}{roles}{harness}")
        for role, config in m.roles.items():
            groups = [
                f"{platform} {section.group_word} {group}"
                for platform, section in self.sections.items()
                if section.role_groups is not None
                for group in config.groups(section.role_groups)
            ]
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
