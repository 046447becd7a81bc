"""What a platform adds to the workspace manifest, and the shapes core knows those parts by.

Core's manifest names no platform. An adapter brings a `ManifestSection`: the model of its
top-level key (`<platform>:`, a `PlatformSettings`), the model of each agent's identity on it
(`agents.<id>.<platform>:`, a `PlatformAgent`), the key under `roles.<name>` that lists its
group ids, and any check that needs the whole manifest. `core.manifest` adds them to its schema
under the platform's name, so a manifest reads as before and every error still names its key
path; adapters read their part back through a typed accessor (`Manifest.section`).

A platform without an agent model names agents by their ids, and roles by their names (a local
chat where the host writes every identity).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CatchUp",
    "HasSections",
    "ManifestSection",
    "PlatformAgent",
    "PlatformSettings",
    "Strict",
]

_Part = TypeVar("_Part", bound=BaseModel)


class HasSections(Protocol):
    """A manifest, or one agent of it: its platform parts by platform name."""

    def section(self, platform: str, kind: type[_Part]) -> _Part | None: ...


class Strict(BaseModel):
    """A manifest part: every key checked (a misspelt key is an error), frozen once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class PlatformSettings(Strict):
    """A platform's top-level manifest section, under the key `platform`; `describe` is its
    line in `c2a check`. `of(manifest)` reads it back, typed."""

    platform: ClassVar[str] = ""

    @classmethod
    def of(cls, manifest: HasSections) -> Self | None:
        return manifest.section(cls.platform, cls)

    def describe(self) -> str:
        return type(self).__name__


class PlatformAgent(Strict):
    """An agent's identity on one platform: its own user id there, any other ids that are the
    same agent (`other_ids`, a bot id), and the platform role standing for it alone, if any.
    It sits under `agents.<id>.<platform>`; `of(agent)` reads it back, typed."""

    platform: ClassVar[str] = ""

    user_id: str

    @classmethod
    def of(cls, agent: HasSections) -> Self | None:
        return agent.section(cls.platform, cls)

    def other_ids(self) -> tuple[str, ...]:
        return ()

    def managed_role(self) -> str | None:
        return None


class CatchUp(Strict):
    """How far back a restart reads a platform's history: per channel, thread and DM, messages
    at most `minutes` old and at most the newest `messages` of them; older ones are logged as
    missed, not answered. 0 turns it off."""

    minutes: int = Field(default=30, ge=0, le=7 * 24 * 60, strict=True)
    messages: int = Field(default=300, ge=0, le=10_000, strict=True)


@dataclass(frozen=True, slots=True)
class ManifestSection:
    """What one platform adds to the manifest (see the module doc). `group_word` names one of
    its groups in `c2a check` (`group`, `role`); `check` is given the whole manifest once it is
    read and raises ValueError naming the key it refuses."""

    settings: type[PlatformSettings] | None = None
    agent: type[PlatformAgent] | None = None
    role_groups: str | None = None
    group_word: str = "group"
    check: Callable[[Any], None] | None = None
