"""Checked reads from one object of an unverified Discord payload; every error names the
dispatch and the field.

A key that is absent and a key that is `null` read the same: as missing. Strings are held to
`MAX_NAME` characters (`MAX_TEXT` for a message's text), integers to 64 bits, times to the
years of `adapters.limits`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, TypeVar

from adapters.limits import MAX_NAME, MAX_TEXT, is_plausible, quoted, since_epoch, too_long
from core.errors import PayloadError

__all__ = ["Fields", "snowflake_time"]

_DISCORD_EPOCH: Final = datetime(2015, 1, 1, tzinfo=UTC)
_SECOND: Final = timedelta(seconds=1)
# Discord's integers (types, flags, unix times) fit 64 bits; a larger one is absurd, and turning
# one of thousands of digits into text would raise.
_INT_BOUND: Final = 1 << 64
# A 64-bit unsigned integer has at most 20 decimal digits.
_SNOWFLAKE_DIGITS: Final = 20

_T = TypeVar("_T")

_KIND_NAMES: Final[Mapping[type, str]] = {
    str: "a string",
    int: "an integer",
    bool: "a boolean",
    list: "a list",
}


def snowflake_time(snowflake: str) -> datetime:
    """The UTC time encoded in a Discord snowflake (its top 42 bits, ms since 2015).

    Raises `ValueError` when `snowflake` is not a decimal 64-bit unsigned integer.
    """
    if (
        not (snowflake.isascii() and snowflake.isdecimal())
        or len(snowflake) > _SNOWFLAKE_DIGITS
        or int(snowflake) >= 1 << 64
    ):
        raise ValueError(f"not a snowflake: {snowflake!r}")
    return _DISCORD_EPOCH + timedelta(milliseconds=int(snowflake) >> 22)


@dataclass(frozen=True, slots=True)
class Fields:
    """Checked reads from one object (`data`) of the dispatch `event`, found at `path`."""

    data: Mapping[str, object]
    event: str
    path: str = ""

    def text(self, key: str) -> str:
        return self._need(key, self.opt_text(key))

    def opt_text(self, key: str, limit: int = MAX_NAME) -> str | None:
        value = self._get(key, str)
        if value is not None and len(value) > limit:
            raise self.invalid(key, too_long(value, limit))
        return value

    def message_text(self, key: str) -> str | None:
        return self.opt_text(key, MAX_TEXT)

    def integer(self, key: str) -> int:
        return self._need(key, self.opt_int(key))

    def opt_int(self, key: str) -> int | None:
        value = self._get(key, int)
        if value is not None and not -_INT_BOUND < value < _INT_BOUND:
            raise self.invalid(key, "is out of range: an integer past 64 bits")
        return value

    def flag(self, key: str) -> bool:
        return self._get(key, bool) or False

    def count(self, key: str) -> int:
        return len(self._get(key, list) or ())

    def obj(self, key: str) -> Fields:
        return self._need(key, self.opt_obj(key))

    def opt_obj(self, key: str) -> Fields | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise self.wrong(key, "an object", value)
        return Fields(value, self.event, f"{self.path}{key}.")

    def objs(self, key: str) -> tuple[Fields, ...]:
        found: list[Fields] = []
        for index, item in enumerate(self._get(key, list) or ()):
            where = f"{key}[{index}]"
            if not isinstance(item, Mapping):
                raise self.wrong(where, "an object", item)
            found.append(Fields(item, self.event, f"{self.path}{where}."))
        return tuple(found)

    def texts(self, key: str) -> tuple[str, ...]:
        found: list[str] = []
        for index, item in enumerate(self._get(key, list) or ()):
            if not isinstance(item, str):
                raise self.wrong(f"{key}[{index}]", "a string", item)
            if len(item) > MAX_NAME:
                raise self.invalid(f"{key}[{index}]", too_long(item, MAX_NAME))
            found.append(item)
        return tuple(found)

    def snowflake_time(self, key: str) -> datetime:
        raw = self.text(key)
        try:
            return snowflake_time(raw)
        except ValueError:
            raise self.invalid(key, f"is not a snowflake: {quoted(raw)}") from None

    def iso_time(self, key: str) -> datetime:
        raw = self.text(key)
        try:
            when = datetime.fromisoformat(raw)
        except ValueError:
            raise self.invalid(key, f"is not an ISO 8601 time: {quoted(raw)}") from None
        if when.tzinfo is None:
            # Discord always sends an offset; a bare time can only have meant UTC.
            when = when.replace(tzinfo=UTC)
        if not is_plausible(when):  # checked first: `astimezone` overflows near the year 1 or 9999
            raise self.invalid(key, f"is not a time in years 1970-2999: {quoted(raw)}")
        return when.astimezone(UTC)

    def unix_time(self, key: str) -> datetime:
        seconds = self.integer(key)
        when = since_epoch(seconds, _SECOND)
        if when is None:
            raise self.invalid(key, f"is not a unix time in years 1970-2999: {seconds}")
        return when

    def wrong(self, key: str, expected: str, value: object) -> PayloadError:
        return self.invalid(key, f"should be {expected}, not {type(value).__name__}")

    def invalid(self, key: str, problem: str) -> PayloadError:
        where = f"{self.path}{key}"
        return PayloadError(
            f"{self.event} payload field '{where}' {problem}",
            details={"event": self.event, "field": where},
        )

    def _get(self, key: str, kind: type[_T]) -> _T | None:
        value = self.data.get(key)
        if value is None:
            return None
        # bool is an int to isinstance, never to Discord.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.wrong(key, _KIND_NAMES.get(kind, kind.__name__), value)
        return value

    def _need(self, key: str, value: _T | None) -> _T:
        if value is None:
            raise self.invalid(key, "is missing")
        return value
