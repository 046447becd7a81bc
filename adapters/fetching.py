"""Fetching a file a platform serves to a bot, for every adapter: only from the platform's own
hosts, never more than a limit, with its failures as the `ToolError` a model reads.

The URL comes from a payload, so a credential goes only to a host the adapter names (its
platform's file hosts and the API base the manifest sets); any other URL is refused before a
request is made.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import aiohttp
import yarl

from core.attachments import Attachment
from core.errors import ToolError

__all__ = ["fetch_limited", "host_of"]

_CHUNK = 65_536


def host_of(url: str) -> str:
    """The host (and port, when it names one) of `url`, lower case; empty when there is none."""
    parsed = yarl.URL(url)
    if not parsed.host:
        return ""
    return parsed.host.lower() + (f":{parsed.explicit_port}" if parsed.explicit_port else "")


async def fetch_limited(
    platform: str,
    attachment: Attachment,
    limit: int,
    *,
    hosts: Iterable[str],
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> bytes:
    """The bytes at `attachment.url`, read with `headers`; ToolError when the URL is not on one
    of `hosts`, the platform refuses, the body passes `limit` bytes, or it cannot be reached."""
    url = attachment.url
    if not url or host_of(url) not in set(hosts) or yarl.URL(url).scheme not in ("http", "https"):
        raise ToolError(f"{platform} gave no URL of its own for file {attachment.name!r}")
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
            session.get(url, headers=dict(headers or {}), allow_redirects=False) as response,
        ):
            if response.status != 200:
                raise ToolError(
                    f"{platform} refused file {attachment.name!r} (HTTP {response.status})"
                )
            if response.content_type == "text/html" and "html" not in attachment.mimetype:
                # Slack answers a token without files:read with its sign-in page, not a 403.
                raise ToolError(
                    f"{platform} answered with a web page instead of file {attachment.name!r};"
                    " the bot may lack the scope to read files"
                )
            body = bytearray()
            async for chunk in response.content.iter_chunked(_CHUNK):
                body += chunk
                if len(body) > limit:
                    raise ToolError(
                        f"file {attachment.name!r} is larger than the {limit} bytes an agent"
                        " may read"
                    )
            return bytes(body)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ToolError(
            f"{platform}: file {attachment.name!r} could not be fetched: {exc}"
        ) from None
