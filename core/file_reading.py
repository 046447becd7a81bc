"""Reading a file attached to a delivered message for an agent: which file, how large it may be,
and what its bytes become for a model (text, or an image as base64), pure but for the fetch.

The guards: the file must be on a message delivered to the agent (the caller checks the
delivery), named by the id the delivery listed; it must be no larger than the workspace's
limit for its kind (`attention.file_text_bytes`, `attention.file_image_bytes`), checked on
the size the platform gave before anything is fetched and again on what arrives; and it must
be text or an image. A refusal is a `ToolError` saying why, having fetched nothing it need not.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from core.attachments import Attachment, FileFetcher, describe, is_image
from core.errors import ToolError
from core.events import ChatEvent
from core.manifest_schema import AttentionSettings

__all__ = ["FileContent", "find_attachment", "limit_for", "read_attachment", "to_content"]

# Types that are text whatever their `text/` prefix says.
_TEXT_TYPES: Final = frozenset(
    {
        "application/json",
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/javascript",
        "application/x-sh",
        "application/toml",
        "application/sql",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class FileContent:
    """A file read for a model: what the platform said of it (`file`, its `size` the bytes
    read), and either its `text` or, for an image, its bytes as `image` (base64)."""

    file: Attachment
    text: str | None = None
    image: str | None = None


def find_attachment(event: ChatEvent, file_id: str) -> Attachment:
    """The file `file_id` on `event`; ToolError naming the files there when it is not one."""
    for attachment in event.attachments:
        if attachment.id == file_id:
            return attachment
    listed = ", ".join(a.id for a in event.attachments) or "none"
    raise ToolError(f"event {event.event_id!r} has no file {file_id!r} (its files: {listed})")


def limit_for(attachment: Attachment, settings: AttentionSettings) -> int:
    """The most bytes of this file an agent may read: the image limit for images, else text's."""
    return settings.file_image_bytes if is_image(attachment) else settings.file_text_bytes


def to_content(attachment: Attachment, body: bytes) -> FileContent:
    """The bytes as a model reads them: an image as base64, text decoded (UTF-8); ToolError for
    anything else."""
    image = text = None
    if is_image(attachment):
        image = base64.b64encode(body).decode("ascii")
    elif _texty(attachment.mimetype) or not attachment.mimetype:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(
                f"file {attachment.name!r} is not UTF-8 text; it cannot be read as text"
            ) from None
    else:
        raise ToolError(
            f"file {attachment.name!r} is {attachment.mimetype}, neither text nor an image;"
            " it cannot be read"
        )
    return FileContent(file=replace(attachment, size=len(body)), text=text, image=image)


async def read_attachment(
    agent: str,
    event: ChatEvent,
    file_id: str,
    fetchers: Mapping[str, object],
    settings: AttentionSettings,
) -> FileContent:
    """File `file_id` of `event` read as `agent` through its platform's fetcher, within the
    limit; ToolError when it is not there, too large, of a kind a model cannot read, or the
    platform cannot fetch files."""
    attachment = find_attachment(event, file_id)
    limit = limit_for(attachment, settings)
    if attachment.size > limit:
        raise _too_large(attachment, limit)
    fetcher = fetchers.get(event.platform)
    if not isinstance(fetcher, FileFetcher):
        raise ToolError(f"files on {event.platform} cannot be read here")
    body = await fetcher.fetch_file(agent, attachment, limit)
    if len(body) > limit:
        raise _too_large(attachment, limit)
    return to_content(attachment, body)


def _too_large(attachment: Attachment, limit: int) -> ToolError:
    return ToolError(
        f"file {describe(attachment)} is larger than the {limit} bytes an agent may read;"
        " ask the person for the part that matters"
    )


def _texty(mimetype: str) -> bool:
    kind = mimetype.split(";", 1)[0].strip().lower()
    return kind.startswith("text/") or kind in _TEXT_TYPES or kind.endswith(("+json", "+xml"))
