"""The manifest's schema: the core keys (agents, roles, channels, attention, access, budgets,
intent and signal overrides) and the assembly of the platforms' sections into it.

Every key is checked: a misspelt key is an error, not a silently ignored setting. The platform
parts (a platform's own section, each agent's identity on it, the key listing its groups under
a role) belong to the adapters (`core.manifest_sections`); `manifest_model` adds those of the
platforms it is given under each platform's name, so a manifest reads the same whoever brings a
section, and every error names its key path. Reading and lookups are `core.manifest`'s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal, TypeVar, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from core.manifest_sections import ManifestSection
from core.manifest_sections import Strict as _Strict
from core.platform import Platform
from core.retention import RetentionSetting
from core.store_choice import StoreSetting

__all__ = [
    "AGENT_ID",
    "Access",
    "AgentConfig",
    "AttentionSettings",
    "Budget",
    "ChannelConfig",
    "Manifest",
    "Misreference",
    "RoleConfig",
    "manifest_model",
]

AGENT_ID = r"^[a-z0-9][a-z0-9_-]{0,62}$"


class Misreference(ValueError):
    """A check across the manifest failed at `path` (its keys from the top), which the error
    names: a whole-manifest check has no place of its own to point at."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path = path


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
    # Who may approve what the agent asks leave for (`core.approvals`): platform user ids, or
    # `group:<id>` for a user group or role; none means every request is refused.
    approvers: list[Annotated[str, Field(min_length=1, pattern=r"^\S+$")]] = Field(
        default_factory=list
    )
    approval_timeout_s: int = Field(default=300, ge=1, le=86400)

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
    # A question to the room that names nobody: `scored`, a turn for each agent the scorer
    # finds likely to take it up (often none); `select`, when it finds none, one agent chosen
    # to answer it, as for a `select` broadcast (docs/attention.md).
    questions: Literal["scored", "select"] = "scored"
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
    # The largest attached file an agent may read (`chat_read_file`), text and images.
    file_text_bytes: int = Field(default=1_000_000, ge=1)
    file_image_bytes: int = Field(default=5_000_000, ge=1)
    # An answer needing more messages than this goes as a file with a summary.
    answer_file_parts: int = Field(default=3, ge=1)


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
    store: StoreSetting | None = None
    retention: RetentionSetting | None = None

    @model_validator(mode="after")
    def _references_resolve(self) -> Manifest:
        import re

        for agent_id, agent in self.agents.items():
            if not re.match(AGENT_ID, agent_id):
                raise Misreference(
                    ("agents", agent_id),
                    "an agent id must be lowercase letters, digits, '-' or '_'",
                )
            for role in agent.roles:
                if role not in self.roles:
                    raise Misreference(
                        ("agents", agent_id, "roles"),
                        f"role {role!r} is not under roles:; add it there or remove it here",
                    )
        leads = [name for name, agent in self.agents.items() if agent.lead]
        if len(leads) > 1:
            raise Misreference(("agents",), f"only one agent may be lead, found {', '.join(leads)}")
        for check in self.platform_checks:
            check(self)
        for channel_id, channel in self.channels.items():
            for agent_id in channel.agents:
                if agent_id not in self.agents:
                    raise Misreference(
                        ("channels", channel_id, "agents"), f"no agent is called {agent_id!r}"
                    )
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
