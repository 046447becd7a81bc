"""The limits every platform payload is held to, shared by the Slack, Discord and web chat
normalisers: how long a string may be, which times are plausible, and how an untrusted value is
quoted in an error.

A payload is untrusted: a string can be any length, a number any size, a date any year. Each
normaliser checks the fields it reads against these bounds and raises `PayloadError` naming the
field, so nothing past them reaches the core (where a year 99999 would overflow a `datetime` and
a megabyte id would be stored, compared and logged). The bounds are far above anything the
platforms send: Slack cuts a message at 40,000 characters and Discord at 4,000; ids, timestamps
and names are tens of characters.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

__all__ = [
    "EARLIEST",
    "LATEST",
    "MAX_NAME",
    "MAX_TEXT",
    "epoch_limit",
    "is_plausible",
    "quoted",
    "since_epoch",
    "too_long",
]

MAX_TEXT: Final = 65_536
"""Characters in the text of a message."""

MAX_NAME: Final = 1_024
"""Characters in every other string: ids, timestamps, names, emoji, channel types."""

EARLIEST: Final = datetime(1970, 1, 1, tzinfo=UTC)
LATEST: Final = datetime(3000, 1, 1, tzinfo=UTC)
"""A payload's times lie in [EARLIEST, LATEST): the core adds windows and TTLs to them, and a
time near `datetime.max` would overflow there instead of here."""

_SPAN: Final = LATEST - EARLIEST
_QUOTED: Final = 40


def is_plausible(moment: datetime) -> bool:
    """Whether an aware `moment` lies in [EARLIEST, LATEST); never overflows, whatever its offset
    (aware datetimes compare by their difference, a `timedelta`)."""
    return EARLIEST <= moment < LATEST


def epoch_limit(unit: timedelta) -> int:
    """How many `unit`s after the Unix epoch LATEST is: a count of them is a plausible time
    when it is at least 0 and below this (a hot path computes it once and compares)."""
    return _SPAN // unit


def since_epoch(amount: int, unit: timedelta) -> datetime | None:
    """The time `amount` `unit`s after the Unix epoch, or None when that is not plausible.

    Checked before the arithmetic, so no integer, however large, raises `OverflowError`."""
    if not 0 <= amount < epoch_limit(unit):
        return None
    return EARLIEST + unit * amount


def quoted(text: str) -> str:
    """`text` as `repr` shows it, cut short: an untrusted value quoted in an error message."""
    if len(text) <= _QUOTED:
        return repr(text)
    return f"{text[:_QUOTED]!r}... ({len(text):,} characters)"


def too_long(text: str, limit: int) -> str:
    """The problem with a string past `limit`, for a normaliser's error message."""
    return f"is too long: {len(text):,} characters, at most {limit:,}"
