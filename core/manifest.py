"""The workspace manifest: loading with errors a person can act on, and the workspace's lookups.

A manifest names the agents, their platform identities and roles, and per-channel overrides.
It never holds a token, only the names of the environment variables that do. Its schema is
`core.manifest_schema` (re-exported here); the platform parts belong to the adapters
(`core.manifest_sections`): `parse_manifest` reads those of the platforms it is given, and
`Workspace` indexes identities per platform without knowing any.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.errors import ManifestError
from core.manifest_schema import (
    AGENT_ID,
    Access,
    AgentConfig,
    AttentionSettings,
    Budget,
    ChannelConfig,
    Manifest,
    Misreference,
    RoleConfig,
    manifest_model,
)
from core.manifest_sections import ManifestSection, PlatformSettings
from core.markup import Markup
from core.platform import Platform
from core.redact import SecretShape
from core.signals import GlyphMap, glyph_map
from core.yaml_safe import Lines, key_path, line_of, read_placed

__all__ = [
    "AGENT_ID",
    "AgentConfig",
    "AttentionSettings",
    "ChannelConfig",
    "Manifest",
    "Misreference",
    "RoleConfig",
    "Workspace",
    "load_manifest",
    "manifest_model",
    "parse_manifest",
]


def parse_manifest(
    data: Any,
    source: str = "<manifest>",
    *,
    backends: Collection[str] | None = None,
    platforms: Mapping[str, Platform] | None = None,
    lines: Lines | None = None,
) -> Manifest:
    """Validate already-parsed YAML; raises ManifestError naming source, line (from `lines`,
    when the text was read with them), key path and problem. With `backends` (the installed
    harness backends' names), each agent's must be one of them; `platforms` (the installed
    adapters, `c2a.platforms`) bring their sections."""
    if not isinstance(data, Mapping):
        raise ManifestError(f"{source}: a manifest must be a mapping of keys", {"file": source})
    try:
        return manifest_model(platforms).model_validate(data, context={"backends": backends})
    except ValidationError as exc:
        problems = [_describe(source, error, lines or {}) for error in exc.errors()]
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
    read = read_placed(path)
    return parse_manifest(
        read.data, str(path), backends=backends, platforms=platforms, lines=read.lines
    )


def _describe(source: str, error: Mapping[str, Any], lines: Lines) -> str:
    cause = (error.get("ctx") or {}).get("error")
    parts = cause.path if isinstance(cause, Misreference) else error["loc"]
    line = line_of(lines, parts)
    where = f"{source}: line {line}: " if line else f"{source}: "
    path = key_path(parts)
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"{where}{path}: unknown key"
    if kind == "missing":
        return f"{where}{path}: required key is missing"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}{path}: {message}"


@dataclass(frozen=True, slots=True)
class Workspace:
    """A validated manifest with the lookups the engine needs, computed once.

    `by_user` maps (platform, user id) to the agent; `roles_by_group` (platform, group id) to
    the roles it stands for; `sections` is what each platform adds to the manifest, `glyphs`
    its reactions, `secrets` the shapes of its secrets, for every redactor built for it, and
    `markup` the markup its text is written in, for the intent rules. `source` is the file it
    was read from, when it was read from one."""

    manifest: Manifest
    agent_ids: tuple[str, ...]
    lead: str
    by_user: Mapping[tuple[str, str], str]
    roles_by_group: Mapping[tuple[str, str], tuple[str, ...]]
    agents_by_role: Mapping[str, tuple[str, ...]]
    glyphs: GlyphMap
    sections: Mapping[str, ManifestSection]
    secrets: tuple[SecretShape, ...] = ()
    markup: Mapping[str, Markup] = field(default_factory=dict)
    source: str | None = None

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
            markup={name: platform.markup for name, platform in platforms.items()},
        )

    @property
    def settings(self) -> AttentionSettings:
        return self.manifest.attention

    @property
    def intent_overrides(self) -> dict[str, dict[str, Any]]:
        """The manifest's changes to the intent word lists, by intent (`intent:`)."""
        return {name: o.model_dump() for name, o in self.manifest.intent.items()}

    def agent_for(self, platform: str, user_id: str | None) -> str | None:
        """The agent bound to a platform user id, if any."""
        if user_id is None:
            return None
        return self.by_user.get((platform, user_id))

    def agent_named(self, word: str) -> str | None:
        """The agent a person means by `word`: its id or one of its short names (`names`), in
        any case, with or without `@`; None for no agent."""
        wanted = word.removeprefix("@").lower()
        for name, agent in self.manifest.agents.items():
            if wanted == name or wanted in (n.lower() for n in agent.names):
                return name
        return None

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

    def approvers(self) -> dict[str, tuple[str, ...]]:
        """Who may approve what each agent asks leave for (`agents.<id>.approvers`)."""
        return {a: tuple(c.approvers) for a, c in self.manifest.agents.items() if c.approvers}

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
        by_name = " or ".join(  # configured platforms that know agents by name, not by id
            p
            for p, s in self.sections.items()
            if s.agent is None and m.section(p, PlatformSettings) is not None
        )
        for name, agent in m.agents.items():
            ids = []
            for platform, section in self.sections.items():
                identity = agent.section(platform, section.agent) if section.agent else None
                if identity is not None:
                    ids.append(f"{platform} {identity.user_id}")
            lead = " (lead: escalations go here)" if name == self.lead else ""
            roles = f"; roles {', '.join(agent.roles)}" if agent.roles else ""
            harness = (
                f"; harness {agent.harness.backend}"
                if agent.harness
                else "; no harness: nothing answers it"
            )
            approvers = f"; approvers {', '.join(agent.approvers)}" if agent.approvers else ""
            only = f"{by_name} only" if by_name else "no platform ids"
            said = f"{', '.join(ids) or only}{roles}{approvers}{harness}"
            lines.append(f"agent {name}{lead}: {said}")
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
                f"channel {channel_id}: broadcast {channel.broadcast}, questions to the room "
                f"{channel.questions}, unaddressed messages as {channel.ambient_mode}"
            )
        s = m.attention
        lines.append(
            f"attention: fragments merge for {s.merge_window_ms} ms, must_respond deadline "
            f"{s.deadline_ms} ms, loop limit {s.loop_rounds} agent messages, "
            f"role selection {s.selection}"
        )
        return lines


_DEFAULT_CHANNEL = ChannelConfig()
