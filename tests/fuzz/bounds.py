"""The fuzz suite's time bound: a call on untrusted input that runs too long fails, not hangs."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["CALL_SECONDS", "Overran", "bounded", "timed"]

# One call on untrusted input must finish well inside this, however hostile the input.
CALL_SECONDS = 2.0

T = TypeVar("T")


class Overran(AssertionError):
    """A call on untrusted input ran past its time bound."""


@contextmanager
def bounded(what: str, seconds: float = CALL_SECONDS) -> Iterator[None]:
    """Fails the example when the block runs longer than `seconds`, interrupting it if it hangs
    (SIGALRM reaches pure-Python loops and the regex engine; the main thread only)."""

    def overran(signum: int, frame: object) -> None:
        raise Overran(f"{what} still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, overran)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def timed(what: str, call: Callable[[], T], seconds: float = CALL_SECONDS) -> T:
    """Runs `call` under `bounded` and returns its value."""
    with bounded(what, seconds):
        return call()
