"""The web chat's part of the workspace manifest: the `webchat:` section (where its page
listens, its channels, its people, the origins that may open its websocket). Agents and roles
need no identity there: the web chat names them by their ids.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from core.manifest import AGENT_ID, Misreference
from core.manifest_sections import ManifestSection, PlatformSettings

__all__ = ["SECTION", "WebchatWorkspace"]


class WebchatWorkspace(PlatformSettings):
    """The local web chat (`adapters/webchat`): where its page listens, its channels, the
    people who can use it, and the pages of other origins that may open its websocket.
    Everyone in it, people and agents, is in every channel."""

    platform: ClassVar[str] = "webchat"

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

    def describe(self) -> str:
        return (
            f"webchat on http://{self.host}:{self.port}/: channels {', '.join(self.channels)}; "
            f"people {', '.join(self.humans)}"
        )


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


def _people_are_not_agents(manifest: Any) -> None:
    settings = WebchatWorkspace.of(manifest)
    if settings is not None:
        taken = sorted(set(settings.humans) & set(manifest.agents))
        if taken:
            raise Misreference(
                ("webchat", "humans"), f"{taken} are agent ids; name people otherwise"
            )


SECTION = ManifestSection(settings=WebchatWorkspace, check=_people_are_not_agents)
