"""A file attached to a chat message, as the platform describes it: the typed value, its ledger
form, the limits on reading one, and the port a platform fetches its bytes through.

An `Attachment` holds only what the platform said of the file (its id, name, type, size and
the URL the platform serves it from); never its bytes and never a secret. The bytes are fetched
when an agent asks for them (`core.file_reading`), through the platform's `FileFetcher`, with
the agent's own bot credentials.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "Attachment",
    "FileFetcher",
    "attachments_from_data",
    "attachments_to_data",
    "describe",
    "describe_file",
    "is_image",
]


@dataclass(frozen=True, slots=True)
class Attachment:
    """One file on a message: the platform's `id` for it, its `name`, `mimetype` (empty when the
    platform does not say), `size` in bytes, and `url`, where the platform serves it to a bot."""

    id: str
    name: str
    mimetype: str = ""
    size: int = 0
    url: str = ""


@runtime_checkable
class FileFetcher(Protocol):
    """A platform's way to read a file attached to a message, as one of its agents.

    `fetch_file` returns the file's bytes, read with `agent`'s own credentials; it never reads
    more than `limit` bytes (a larger file raises `ToolError` saying so), and it raises
    `ToolError` with a line a model can act on when the platform refuses or cannot be reached.
    It sends a credential only to the platform's own hosts."""

    async def fetch_file(self, agent: str, attachment: Attachment, limit: int) -> bytes: ...


def is_image(attachment: Attachment) -> bool:
    """Whether the platform says the file is an image."""
    return attachment.mimetype.startswith("image/")


def describe(attachment: Attachment) -> str:
    """`name, type, size` as a person reads it: `notes.txt, text/plain, 1.2 kB`."""
    return describe_file(attachment.name, attachment.mimetype, attachment.size)


def describe_file(name: str, mimetype: str, size: int) -> str:
    """A file's `name, type, size` as a person reads it (the name as given)."""
    return f"{name}, {mimetype or 'unknown type'}, {_size(size)}"


def _size(size: int) -> str:
    if size < 1000:
        return f"{size} B"
    if size < 1_000_000:
        return f"{size / 1000:.1f} kB"
    return f"{size / 1_000_000:.1f} MB"


def attachments_to_data(attachments: Iterable[Attachment]) -> list[dict[str, Any]]:
    """The ledger's form: one dict per file, empty fields left out."""
    found: list[dict[str, Any]] = []
    for attachment in attachments:
        data: dict[str, Any] = {"id": attachment.id, "name": attachment.name}
        if attachment.mimetype:
            data["mimetype"] = attachment.mimetype
        if attachment.size:
            data["size"] = attachment.size
        if attachment.url:
            data["url"] = attachment.url
        found.append(data)
    return found


def attachments_from_data(data: Iterable[Mapping[str, Any]]) -> tuple[Attachment, ...]:
    """The inverse of `attachments_to_data`."""
    return tuple(
        Attachment(
            id=str(item["id"]),
            name=str(item.get("name", "")),
            mimetype=str(item.get("mimetype", "")),
            size=int(item.get("size", 0)),
            url=str(item.get("url", "")),
        )
        for item in data
    )
