"""The live host of one workspace: platform payloads in, durable decisions, emissions out.

Adapters call `Host.receive` with the native payload and the agent whose connection got it,
and acknowledge the platform only after it returns: by then the event is committed to the
ledger. Emissions go to the sink only after that commit. Ingestion is serialised (the ledger
has one writer), whichever adapter the payload came from, and events that arrive while a
commit runs are written together in the next one (`c2a.group_commit`).

`receive` is the boundary every platform payload crosses: a payload a normaliser cannot read,
whether it says so (`PayloadError`) or fails in a way nobody foresaw, is quarantined with its
reason and logged in one line; the adapter is never handed the exception, so one bad payload
never holds up the ones after it. So is a payload the engine fails on (`IngestFailed`, a bug:
logged as an error with its traceback): the platform is acknowledged, since taking it again
would fail again, and the payload is kept for a person to look at.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson

from c2a.group_commit import BATCH_LIMIT, GroupCommit, IngestFailed
from c2a.platforms import installed, normalisers
from c2a.repeat_cache import RepeatCache, repeat_readers
from core.clock import Clock, format_time
from core.emission import Emission, Outcome
from core.engine import Engine
from core.errors import C2AError
from core.events import ChatEvent
from core.manifest import Workspace
from core.platform import Platform
from core.redact import Redactor
from core.store import Store

__all__ = ["Host", "Sink", "failure_reason", "quarantine_text"]

log = logging.getLogger(__name__)

Sink = Callable[[list[Emission]], Awaitable[None]]

# Characters of an unexpected exception's message kept in a reason: enough to recognise it.
_REASON_CHARS = 200


class Host:
    """Receives every platform payload of one workspace."""

    def __init__(
        self,
        workspace: Workspace,
        store: Store,
        clock: Clock,
        sink: Sink,
        redactor: Redactor | None = None,
        *,
        platforms: Mapping[str, Platform] | None = None,
        repeats: bool = True,
        batch: int = BATCH_LIMIT,
    ) -> None:
        """`redactor` defaults to one that knows the secrets the manifest names in this
        process's environment; `platforms` (by name) to the installed ones (`c2a.platforms`):
        their normalisers read payloads, and with `repeats` a platform's later copies of one
        event are known without normalising them (`c2a.repeat_cache`); `batch` is the most
        events one transaction takes."""
        platforms = installed() if platforms is None else platforms
        self.normalisers = normalisers(platforms)
        self.repeats = RepeatCache(repeat_readers(platforms) if repeats else {})
        self.redactor = redactor or Redactor.for_manifest(
            workspace.manifest, os.environ, workspace.secrets
        )
        self.engine = Engine(workspace, store, clock, redactor=self.redactor)
        self.store = store
        self.clock = clock
        self.sink = sink
        self._writer = asyncio.Lock()
        self._started = False
        self._commits = GroupCommit(
            self.engine.transaction,
            self._writer,
            self._ingest,
            self._sink,
            limit=batch,
        )

    async def start(self) -> None:
        await self.store.open()
        await self.engine.start()
        self._started = True

    async def close(self) -> None:
        """Stop: what is being committed is, the memory of a host that started is saved for the
        next start (unless the store fails: then that start folds the ledger), and the store
        closes."""
        await self._commits.drain()
        async with self._writer:
            try:
                if self._started:
                    await self.engine.save_snapshot()
            except Exception as exc:  # the next start folds the whole ledger, as it always did
                log.warning("the memory is not saved for the next start: %s", exc)
        await self.store.close()

    async def receive(
        self, platform: str, payload: Mapping[str, Any], via: str | None = None
    ) -> Outcome | None:
        """Normalise, commit and decide one payload; None when it is ignored or unreadable.
        Returns once the event is committed (with those that came with it) and its emissions
        are with the sink.

        An unreadable payload (the normaliser raised anything at all) is quarantined with its
        reason, secrets blanked, and logged once: a warning without a traceback, and the
        traceback at debug level when the failure was not one of the project's own errors.
        A payload the engine fails on is quarantined too, and logged as an error with the
        traceback. Raises only when the ledger itself (or the sink) fails."""
        normalise = self.normalisers[platform]
        try:
            event = self.repeats.read(platform, payload, normalise)
        except Exception as exc:  # the last line of defence: no payload reaches the adapter's loop
            if not isinstance(exc, C2AError):
                log.debug("%s normaliser failed on a payload", platform, exc_info=True)
            reason = self.redactor.text(failure_reason(exc))
            log.warning("unreadable %s payload: %s", platform, reason)
            await self._quarantine(platform, reason, payload)
            return None
        if event is None:
            return None
        try:
            return await self._commits.submit(event, via)
        except IngestFailed as failed:
            cause = failed.__cause__ or failed
            reason = self.redactor.text(f"the engine failed on it: {failure_reason(cause)}")
            log.error(
                "%s event %s kept in the quarantine: %s",
                platform,
                event.event_id,
                reason,
                exc_info=cause,
            )
            await self._quarantine(platform, reason, payload)
            return None

    async def _ingest(self, event: ChatEvent, via: str | None) -> Outcome:
        return await self.engine.ingest(event, via)  # the engine and sink of the moment

    async def _sink(self, emissions: list[Emission]) -> None:
        await self.sink(emissions)

    async def _quarantine(self, platform: str, reason: str, payload: Mapping[str, Any]) -> None:
        """Keep a payload for a person to look at, with its secrets redacted (`reason` comes
        redacted: a normaliser's message may quote the value it could not read)."""
        text = quarantine_text(payload, self.redactor)
        async with self._writer, self.store.transaction():
            await self.store.quarantine(platform, reason, text, format_time(self.clock.now()))


def failure_reason(exc: BaseException) -> str:
    """Why a payload could not be read, in one short line: a project error's own message, else
    `unexpected <type>: <message>`, its message cut short (it may quote the payload)."""
    if isinstance(exc, C2AError):
        return str(exc)
    detail = " ".join(str(exc).split())
    if len(detail) > _REASON_CHARS:
        detail = detail[:_REASON_CHARS] + "..."
    return f"unexpected {type(exc).__name__}: {detail}" if detail else type(exc).__name__


def quarantine_text(payload: object, redactor: Redactor) -> str:
    """The payload as JSON, secrets redacted, for the quarantine table; a payload that
    cannot be written as JSON (too deep, an integer past 64 bits, not an object) is stored as
    a JSON string saying why, never as its raw text."""
    try:
        if not isinstance(payload, Mapping):
            raise TypeError(f"a {type(payload).__name__}, not an object")
        return orjson.dumps(redactor.data(payload)).decode()
    except (TypeError, ValueError, RecursionError) as exc:
        return orjson.dumps(f"[payload not stored: {type(exc).__name__}: {exc}]").decode()
