"""The installed platform adapters, found by entry point: what `c2a` wires into each workspace.

An adapter registers one `core.platform.Platform` under the entry point group `c2a.adapters`
(pyproject.toml declares the built-in ones), so a new platform is a new package, not an edit
here. The built-in adapters are also named in `BUILTIN`, the way pytest keeps its default
plugins: an install whose metadata predates the group (an editable install not reinstalled)
still has them, and an installed entry point of the same name replaces one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import MappingProxyType

from core.errors import C2AError
from core.manifest import Workspace, load_manifest
from core.platform import PLATFORM_GROUP, Normaliser, Platform
from core.redact import SecretShape

__all__ = [
    "BUILTIN",
    "PLATFORM_GROUP",
    "installed",
    "load_workspace",
    "normalisers",
    "secret_shapes",
]

BUILTIN: Mapping[str, str] = MappingProxyType(
    {
        "slack": "adapters.slack.plugin:PLATFORM",
        "discord": "adapters.discord.plugin:PLATFORM",
        "webchat": "adapters.webchat.plugin:PLATFORM",
    }
)


def installed() -> Mapping[str, Platform]:
    """Every installed platform by name: the built-in ones in `BUILTIN`'s order (the order
    `c2a check` describes them in), then the others in name order; C2AError for an entry point
    that is not a `Platform` of its own name."""
    installed_points = {point.name: point for point in entry_points(group=PLATFORM_GROUP)}
    points = {
        name: installed_points.get(name) or EntryPoint(name, value, PLATFORM_GROUP)
        for name, value in BUILTIN.items()
    }
    points |= {name: installed_points[name] for name in sorted(installed_points)}
    found: dict[str, Platform] = {}
    for name in points:
        platform = points[name].load()
        if not isinstance(platform, Platform) or platform.name != name:
            raise C2AError(
                f"entry point {name} = {points[name].value} in {PLATFORM_GROUP} is not a "
                f"core.platform.Platform named {name!r}"
            )
        found[name] = platform
    return MappingProxyType(found)


def normalisers(platforms: Mapping[str, Platform]) -> dict[str, Normaliser]:
    """Each platform's normaliser by name: what the host reads a payload with."""
    return {name: platform.normalise for name, platform in platforms.items()}


def secret_shapes(platforms: Mapping[str, Platform] | None = None) -> tuple[SecretShape, ...]:
    """The shapes of every platform's secrets (the installed ones by default): a redactor
    built before any manifest is read (the log filter's) knows them all."""
    platforms = installed() if platforms is None else platforms
    return tuple(shape for platform in platforms.values() for shape in platform.secrets)


def load_workspace(
    path: str | Path,
    *,
    backends: Collection[str] | None = None,
    platforms: Mapping[str, Platform] | None = None,
) -> Workspace:
    """The manifest at `path` read with the sections of `platforms` (the installed ones by
    default) and indexed for them; ManifestError as `load_manifest` raises it."""
    platforms = installed() if platforms is None else platforms
    manifest = load_manifest(path, backends=backends, platforms=platforms)
    return replace(Workspace.from_manifest(manifest, platforms), source=str(path))
