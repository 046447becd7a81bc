"""Files on Slack messages: what a message's `files` say of each (pure), and reading one as an
agent (`url_private` with the agent's bot token, which needs the `files:read` scope)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from slack_sdk.web.async_client import AsyncWebClient

from adapters.fetching import fetch_limited, host_of
from adapters.slack.fields import optional_list
from core.attachments import Attachment
from core.errors import ToolError

__all__ = ["FILE_HOSTS", "extract_attachments", "fetch_file"]

# Where Slack serves `url_private`; the workspace's API base is added (a proxy, a test fake).
FILE_HOSTS: Final = frozenset({"files.slack.com"})


def extract_attachments(message: Mapping[str, Any], where: str) -> tuple[Attachment, ...]:
    """Each file of `message` Slack describes: id, name, type, size and `url_private`. An entry
    without an id, or not an object, is skipped (a file hidden by the plan's limit, say)."""
    found: list[Attachment] = []
    for item in optional_list(message, "files", where):
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            continue
        size = item.get("size")
        found.append(
            Attachment(
                id=item["id"],
                name=_text(item, "name") or _text(item, "title") or item["id"],
                mimetype=_text(item, "mimetype"),
                size=size if isinstance(size, int) and size >= 0 else 0,
                url=_text(item, "url_private"),
            )
        )
    return tuple(found)


async def fetch_file(
    platform: str, client: AsyncWebClient | None, attachment: Attachment, limit: int
) -> bytes:
    """The file's bytes, read as the agent whose bot `client` is (its token as a Bearer
    credential, sent only to Slack's file hosts or the client's own API host)."""
    if client is None or not client.token:
        raise ToolError(f"{platform}: this agent has no bot token to read files with")
    return await fetch_limited(
        platform,
        attachment,
        limit,
        hosts=FILE_HOSTS | {host_of(client.base_url)},
        headers={"Authorization": f"Bearer {client.token}"},
    )


def _text(item: Mapping[str, Any], key: str) -> str:
    value = item.get(key)
    return value if isinstance(value, str) else ""
