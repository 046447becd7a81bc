"""Whether this process can reach each PostgreSQL ledger it uses, said once each way.

A process holds several connections to one ledger (the store's, the leases', the listener's),
and a server that stops breaks them all. The first connection that cannot connect again says
so (`unreachable`), the first that connects again says that (`reachable`): one log line each
way per outage, whichever connection notices. Each loss seen on a connection (`lost`) starts a
new epoch of its server: a connection made in an earlier one is dropped and made again before
its next statement (`stale`), instead of failing that statement on a socket the server closed.

What a call raises meanwhile is a `StoreError` made by `error`, which `during_outage` tells
apart: the loops that go on through an outage (the outbox, the sweep, a platform's receiving)
log it quietly, since this module has said it once.
"""

from __future__ import annotations

import logging

from core.errors import StoreError

__all__ = ["during_outage", "epoch", "error", "lost", "reachable", "stale", "unreachable"]

log = logging.getLogger("c2a.store")

_down: set[str] = set()
_epochs: dict[str, int] = {}


def epoch(at: str) -> int:
    """How many losses of the server `at` (`core.postgres.connection.where`) were seen."""
    return _epochs.get(at, 0)


def stale(at: str, made_in: int) -> bool:
    """Whether a connection to `at` made in epoch `made_in` predates a loss."""
    return made_in < epoch(at)


def lost(at: str) -> None:
    """A connection to `at` broke: every connection made before is to be made again."""
    _epochs[at] = epoch(at) + 1


def unreachable(at: str, error: BaseException) -> None:
    """A connection to `at` could not be made; said once until it can again."""
    if at not in _down:
        _down.add(at)
        log.warning(
            "the ledger at %s is unreachable (%s): no event is taken in or acknowledged, and "
            "nothing is sent, until it answers again",
            at,
            type(error).__name__,
        )


def reachable(at: str) -> None:
    """A connection to `at` was made; said once after it was unreachable."""
    if at in _down:
        _down.discard(at)
        log.warning("the ledger at %s answers again: resuming", at)


def error(message: str, at: str) -> StoreError:
    """The error a call raises when the server `at` cannot be reached or dropped the
    connection: nothing it was to write is kept."""
    return StoreError(message, {"unreachable": at})


def during_outage(exc: BaseException) -> bool:
    """Whether `exc` says only that a ledger's server is out of reach (said once already)."""
    return isinstance(exc, StoreError) and "unreachable" in exc.details
