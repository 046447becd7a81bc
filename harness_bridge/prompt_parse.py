"""Rendered events read back (`parse_rendered`): what tests, replays and scripted agents check
a prompt by. The inverse of `harness_bridge.prompt.render_event` for everything the host
writes; chat text comes back from behind its fence.
"""

from __future__ import annotations

import re

from harness_bridge.prompt_format import FENCE, HEADER_KEYS, KNOCK_KEYS

__all__ = ["parse_rendered"]

_FIELD = re.compile(r"([a-z_]+): (.*)")
_TRUNCATED = re.compile(r"\[truncated (\d+) characters\]")


def _put(fields: dict[str, str], key: str, value: str, number: int) -> None:
    if key in fields:
        raise ValueError(f"line {number}: {key!r} appears twice in one event")
    fields[key] = value


def parse_rendered(text: str) -> list[dict[str, str]]:
    """Read rendered events back: for each `C2A EVENT` block, its header fields, the knock's
    fields as `knock.<key>`, and under `message` the fenced text with the fence removed;
    `truncated` (characters cut) and `parts` (described non-text parts, one per line) when
    present. Lines outside event blocks (the rules) are skipped.

    Raises ValueError for an unknown or repeated field, or a line that fits no block.
    """
    events: list[dict[str, str]] = []
    fields: dict[str, str] = {}
    block = ""  # "" outside an event, else "header", "knock" or "message"
    fenced: list[str] = []
    parts: list[str] = []

    def close() -> None:
        if block == "message":
            fields["message"] = "\n".join(fenced)
        if parts:
            fields["parts"] = "\n".join(parts)

    for number, line in enumerate(text.split("\n"), start=1):
        if line == "C2A EVENT" or (block and not line):
            close()
            fields, fenced, parts = {}, [], []
            block = "header" if line else ""
            if line:
                events.append(fields)
            continue
        if not block:
            continue
        if block == "header" and line in ("MESSAGE", "KNOCK"):
            block = line.lower()
            continue
        if block == "message":
            if line.startswith(FENCE[0]):
                fenced.append(line[2:] if line.startswith(FENCE) else line[1:])
            elif match := _TRUNCATED.fullmatch(line):
                _put(fields, "truncated", match[1], number)
            elif line.startswith("["):
                parts.append(line)
            else:
                raise ValueError(f"line {number}: unfenced text in a message: {line[:80]!r}")
            continue
        match = _FIELD.fullmatch(line)
        keys = HEADER_KEYS if block == "header" else KNOCK_KEYS
        if match is None or match[1] not in keys:
            raise ValueError(f"line {number}: not a {block} field: {line[:80]!r}")
        key = match[1] if block == "header" else f"knock.{match[1]}"
        _put(fields, key, match[2], number)
    close()
    return events
