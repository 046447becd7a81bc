"""Discord's failures as the outbox reads them, and the bounded retry of those worth retrying.

403/404 and other refusals are `PermanentSendError`; a 429 that discord.py's own rate-limit
handling gave up on, or a connection that never opened, is `TransientSendError`; 5xx answers
and broken connections are retried (`Retry`: tenacity, bounded, exponential backoff; a message
keeps its nonce). When those retries run out, what is harmless to do again (a reaction, typing,
an edit) is `TransientSendError`, but a message may have been posted, so `SendOutcomeUnknown` is
raised and the outbox marks the action ambiguous and calls `find` before any resend.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import NoReturn, TypeVar

import aiohttp
import discord
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from core.errors import PermanentSendError, SendError, SendOutcomeUnknown, TransientSendError

__all__ = ["Retry", "describe", "failure", "raise_as"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Retry:
    """A call retried on 5xx and network failures: at most `attempts` tries, waiting
    `backoff` seconds doubled each time (at most 8)."""

    attempts: int = 3
    backoff: float = 0.5

    async def __call__(self, call: Callable[[], Awaitable[_T]]) -> _T:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=self.backoff, max=8),
            retry=retry_if_exception(_worth_retrying),
            reraise=True,
        )
        # Iterated, not called: tenacity awaits only what it can tell is a coroutine function.
        async for attempt in retrying:
            with attempt:
                return await call()
        raise AssertionError("tenacity ended without a result or an error")  # reraise=True


def _worth_retrying(exc: BaseException) -> bool:
    if isinstance(exc, discord.DiscordServerError):
        return True
    return isinstance(exc, aiohttp.ClientError | OSError)


def raise_as(exc: Exception, what: str, *, idempotent: bool, partial: bool = False) -> NoReturn:
    """Raise the outbox's reading of a failure that retries did not cure: `idempotent` when
    doing it again is harmless, `partial` when part of a message is already visible."""
    error = failure(exc, what, idempotent=idempotent, partial=partial)
    if error is exc:
        raise exc
    raise error from exc


def failure(exc: Exception, what: str, *, idempotent: bool, partial: bool) -> Exception:
    """The send error `exc` means (itself when it already is one, or is not Discord's)."""
    if isinstance(exc, SendError):
        return exc
    details = {"status": getattr(exc, "status", None), "code": getattr(exc, "code", None)}
    message = f"discord: {what}: {describe(exc)}"
    if isinstance(exc, discord.HTTPException) and exc.status < 500 and exc.status != 429:
        return PermanentSendError(message, details)
    not_done = isinstance(exc, discord.RateLimited | aiohttp.ClientConnectorError) or (
        isinstance(exc, discord.HTTPException) and exc.status == 429
    )
    maybe_done = isinstance(exc, discord.HTTPException | aiohttp.ClientError | OSError)
    if (not_done and not partial) or (maybe_done and idempotent):
        return TransientSendError(message, details)
    if not_done or maybe_done:
        return SendOutcomeUnknown(message, details)
    return exc


def describe(exc: BaseException) -> str:
    text = str(exc) or "no detail"
    return f"{type(exc).__name__}: {text}"
