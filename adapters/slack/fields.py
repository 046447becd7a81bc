"""Checked reads of one field of an untrusted Slack payload; every error names the field.

Each reader takes the object, the key, and where the object sits in the body (`"event"`,
`"event.message"`, `""` for the body itself); the dotted path of the field (`event.ts`) is
only spelled out when something is wrong, so a read that succeeds costs a lookup and a type
check. Strings are held to `MAX_NAME` characters unless a reader is given another limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.limits import MAX_NAME, too_long
from core.errors import PayloadError

__all__ = [
    "field_path",
    "mapping",
    "missing",
    "optional_list",
    "optional_mapping",
    "optional_str",
    "required_str",
    "wrong_type",
]


def field_path(where: str, key: str) -> str:
    """The dotted path of `key` in the object at `where` (`""`: the body)."""
    return f"{where}.{key}" if where else key


def required_str(obj: Mapping[str, Any], key: str, where: str) -> str:
    """A non-empty string; raises `PayloadError` when it is missing, empty or wrong."""
    value = obj.get(key)
    if type(value) is str and 0 < len(value) <= MAX_NAME:
        return value
    checked = optional_str(obj, key, where)  # raises for a value of the wrong type or length
    if not checked:
        raise missing(field_path(where, key))
    return checked


def optional_str(obj: Mapping[str, Any], key: str, where: str, limit: int = MAX_NAME) -> str | None:
    """A string of at most `limit` characters, or None when absent or null."""
    value = obj.get(key)
    if value is None or (type(value) is str and len(value) <= limit):
        return value
    path = field_path(where, key)
    if not isinstance(value, str):
        raise wrong_type(path, value, "string")
    if len(value) > limit:
        raise PayloadError(
            f"Slack payload field '{path}' {too_long(value, limit)}", details={"field": path}
        )
    return value  # a subclass of `str` within the limit


def mapping(obj: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """An object; raises `PayloadError` when it is missing or not an object."""
    value = optional_mapping(obj, key, where)
    if value is None:
        raise missing(field_path(where, key))
    return value


def optional_mapping(obj: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any] | None:
    """An object, or None when absent or null."""
    value = obj.get(key)
    # `type(...) is dict` first: it is the usual case, and far cheaper than the ABC check.
    if value is not None and type(value) is not dict and not isinstance(value, Mapping):
        raise wrong_type(field_path(where, key), value, "object")
    return value


def optional_list(obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
    """A list, empty when absent or null."""
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise wrong_type(field_path(where, key), value, "list")
    return value


def missing(path: str) -> PayloadError:
    """The error for a field the payload lacks."""
    return PayloadError(f"Slack payload is missing '{path}'", details={"field": path})


def wrong_type(path: str, value: object, expected: str) -> PayloadError:
    """The error for a field (`""`: the body) that is not of the `expected` kind."""
    where = f"field '{path}'" if path else "body"
    return PayloadError(
        f"Slack payload {where} should be {expected}, not {type(value).__name__}",
        details={"field": path},
    )
