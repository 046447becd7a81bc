"""Files an agent's message carries: the typed value, the limits an agent's files are held to,
and the one rule that turns a long answer into a file with a short summary, for every platform.

A file is a name and text content. The name is sanitised (`safe_name`): what a model writes
as a path keeps only its last part, and nothing a platform or a browser would read as a
directory, a hidden file or a control character is left in it. A message carries at most
`MAX_FILES` files of at most `MAX_FILE_BYTES` each (UTF-8); more is refused with a `ToolError`
saying so, having queued nothing.

An answer longer than `parts` of a platform's messages of `limit` characters (the workspace's
`attention.answer_file_parts`, 3 unless set) goes out as `ANSWER_NAME` with a summary
(`long_answer`): its first paragraph, or its first lines, cut cleanly at a word, and a line
saying the whole answer is attached.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from core.errors import ToolError

__all__ = [
    "ANSWER_NAME",
    "ATTACHED_NOTE",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "PostFile",
    "checked_files",
    "contents",
    "files_from_record",
    "files_record",
    "long_answer",
    "parts_needed",
    "safe_name",
    "summary",
]

MAX_FILES: Final = 4
MAX_FILE_BYTES: Final = 1_000_000
MAX_NAME: Final = 120
ANSWER_NAME: Final = "answer.md"
ATTACHED_NOTE: Final = "(The full answer is attached as answer.md.)"
SUMMARY_CHARS: Final = 600

_UNSAFE: Final = re.compile(r"[\x00-\x1f\x7f<>:\"|?*\\/]+")


@dataclass(frozen=True, slots=True)
class PostFile:
    """One file a message carries: its (sanitised) `name` and its text `content`."""

    name: str
    content: str


def safe_name(name: str) -> str:
    """`name` as a file name every platform takes: its last path part, with no control or
    reserved characters, no leading dots, at most `MAX_NAME` characters; `file.txt` when
    nothing is left."""
    last = re.split(r"[\\/]", name.strip())[-1]
    cleaned = _UNSAFE.sub("_", last).strip().lstrip(".").strip()
    if len(cleaned) > MAX_NAME:
        _, dot, ext = cleaned.rpartition(".")
        keep = ext if dot and 0 < len(ext) <= 10 else ""
        cleaned = cleaned[: MAX_NAME - len(keep) - 1].rstrip() + (f".{keep}" if keep else "")
    return cleaned or "file.txt"


def checked_files(files: Sequence[PostFile]) -> tuple[PostFile, ...]:
    """The files with safe names, each within the limits; ToolError saying which is not."""
    if len(files) > MAX_FILES:
        raise ToolError(f"a message carries at most {MAX_FILES} files, not {len(files)}")
    checked: list[PostFile] = []
    for file in files:
        size = len(file.content.encode())
        if size > MAX_FILE_BYTES:
            raise ToolError(
                f"file {file.name!r} is {size:,} bytes; a file may be at most {MAX_FILE_BYTES:,}"
            )
        checked.append(PostFile(safe_name(file.name), file.content))
    return tuple(checked)


def parts_needed(text: str, limit: int) -> int:
    """How many messages of at most `limit` characters `text` needs, at least one."""
    return max(1, -(-len(text.strip()) // limit))


def long_answer(text: str, limit: int | None, parts: int) -> tuple[str, PostFile] | None:
    """The summary message and the file a long answer goes out as, when `text` needs more
    than `parts` messages of `limit` characters; None when it fits (or there is no limit)."""
    if limit is None or parts_needed(text, limit) <= parts:
        return None
    return f"{summary(text)}\n\n{ATTACHED_NOTE}", PostFile(ANSWER_NAME, text.strip())


def contents(
    text: str, files: Sequence[PostFile], ephemeral: bool, limit: int | None, parts: int
) -> tuple[str, tuple[PostFile, ...]]:
    """The text and files a message goes out with: its own `files`, checked, or, for an answer
    too long for `parts` of the platform's messages of `limit` characters, a summary and the
    answer as a file. An `ephemeral` message carries no file, and is never made one."""
    checked = checked_files(files)
    if checked and ephemeral:
        raise ToolError("an ephemeral message cannot carry files; post it in the thread")
    if checked or ephemeral:
        return text, checked
    long = long_answer(text, limit, parts)
    return (text, ()) if long is None else (long[0], (long[1],))


def summary(text: str, most: int = SUMMARY_CHARS) -> str:
    """The start of `text` as a summary: its first paragraph, at most `most` characters, cut
    at the last word that fits and marked `…` when cut."""
    first = text.strip().split("\n\n", 1)[0].strip()
    if len(first) <= most:
        return first
    head = first[: most + 1]
    at = max(head.rfind(" "), head.rfind("\n"))
    return (head[:at] if at > 0 else first[:most]).rstrip() + " …"


def files_record(files: Sequence[PostFile]) -> dict[str, list[dict[str, str]]]:
    """The outbox record's `files` field, or nothing at all when there are none (so a post
    without files is stored as it always was)."""
    return {"files": [{"name": f.name, "content": f.content} for f in files]} if files else {}


def files_from_record(value: object) -> tuple[PostFile, ...]:
    """The files a record's `files` field holds (None or missing: none); ValueError naming
    what is wrong."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ValueError(f"files is {type(value).__name__}, not a list")
    files = []
    for item in value:
        name = item.get("name") if isinstance(item, dict) else None
        content = item.get("content") if isinstance(item, dict) else None
        if not isinstance(name, str) or not name or not isinstance(content, str):
            raise ValueError("a file is not a name and a text content")
        files.append(PostFile(name, content))
    return tuple(files)
