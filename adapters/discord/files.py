"""Files on Discord messages: what a message's `attachments` say of each (pure), and reading
one (its CDN URL, which Discord signs: no token is sent, so none can leak to the CDN)."""

from __future__ import annotations

from typing import Final

from adapters.discord.fields import Fields
from adapters.fetching import fetch_limited, host_of
from core.attachments import Attachment

__all__ = ["FILE_HOSTS", "extract_attachments", "fetch_file"]

# Where Discord serves attachments; the workspace's API base is added (a proxy, a test fake).
FILE_HOSTS: Final = frozenset({"cdn.discordapp.com", "media.discordapp.net"})


def extract_attachments(f: Fields) -> tuple[Attachment, ...]:
    """Each attachment of the message `f`: id, file name, content type, size and CDN URL."""
    return tuple(
        Attachment(
            id=item.text("id"),
            name=item.opt_text("filename") or item.text("id"),
            mimetype=item.opt_text("content_type") or "",
            size=max(item.opt_int("size") or 0, 0),
            url=item.opt_text("url", 4096) or "",
        )
        for item in f.objs("attachments")
    )


async def fetch_file(attachment: Attachment, limit: int, api_url: str | None) -> bytes:
    """The attachment's bytes from Discord's CDN (or the configured API host)."""
    hosts = FILE_HOSTS | ({host_of(api_url)} if api_url else set())
    return await fetch_limited("discord", attachment, limit, hosts=hosts)
