"""Reading the fields of a stored record (an outbox row's JSON): each reader returns the typed
value or raises ValueError naming the field and what it holds instead."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["mentions", "optional", "text"]


def text(record: Mapping[str, Any], field: str) -> str:
    """A required, non-empty text."""
    value = record.get(field)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field} is {value!r}, not a non-empty text")
    return value


def optional(record: Mapping[str, Any], field: str) -> str | None:
    """A text that may be missing (None or empty: None)."""
    value = record.get(field)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"{field} is {value!r}, not a text")
    return value


def mentions(record: Mapping[str, Any]) -> tuple[str, ...]:
    """The `mentions` list of texts (missing: none)."""
    value = record.get("mentions") or ()
    if not isinstance(value, (list, tuple)) or not all(isinstance(m, str) for m in value):
        raise ValueError(f"mentions is {value!r}, not a list of texts")
    return tuple(value)
