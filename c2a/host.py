"""The live host of one workspace: platform payloads in, durable decisions, emissions out.

Adapters call `Host.receive` with the native payload and the agent whose connection got it,
and acknowledge the platform only after it returns: by then the event is committed to the
ledger. Emissions go to the sink only after that commit. Ingestion is serialised (the ledger
has one writer), whichever adapter the payload came from.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson

from adapters.discord import normalise as normalise_discord
from adapters.slack import normalise as normalise_slack
from adapters.webchat.normalise import normalise as normalise_webchat
from core.clock import Clock, format_time
from core.engine import Emission, Engine, Outcome
from core.errors import PayloadError
from core.events import ChatEvent
from core.manifest import Workspace
from core.redact import Redactor
from core.store import Store

__all__ = ["NORMALISERS", "Host", "Sink"]

log = logging.getLogger(__name__)

Normaliser = Callable[[Mapping[str, Any]], ChatEvent | None]
Sink = Callable[[list[Emission]], Awaitable[None]]

NORMALISERS: dict[str, Normaliser] = {
    "slack": normalise_slack,
    "discord": normalise_discord,
    "webchat": normalise_webchat,
}


class Host:
    """Receives every platform payload of one workspace."""

    def __init__(
        self,
        workspace: Workspace,
        store: Store,
        clock: Clock,
        sink: Sink,
        redactor: Redactor | None = None,
    ) -> None:
        """`redactor` defaults to one that knows the secrets the manifest names in this
        process's environment."""
        self.redactor = redactor or Redactor.for_manifest(workspace.manifest, os.environ)
        self.engine = Engine(workspace, store, clock, redactor=self.redactor)
        self.store = store
        self.clock = clock
        self.sink = sink
        self._writer = asyncio.Lock()

    async def start(self) -> None:
        await self.store.open()
        await self.engine.rebuild()

    async def close(self) -> None:
        await self.store.close()

    async def receive(
        self, platform: str, payload: Mapping[str, Any], via: str | None = None
    ) -> Outcome | None:
        """Normalise, commit and decide one payload; None when it is ignored or unreadable
        (an unreadable payload is quarantined with its reason, secrets blanked, and logged)."""
        try:
            event = NORMALISERS[platform](payload)
        except PayloadError as exc:
            await self._quarantine(platform, str(exc), payload)
            return None
        if event is None:
            return None
        async with self._writer, self.store.transaction():
            outcome = await self.engine.ingest(event, via)
        if outcome.emissions:
            await self.sink(outcome.emissions)
        return outcome

    async def _quarantine(self, platform: str, reason: str, payload: Mapping[str, Any]) -> None:
        """Keep an unreadable payload for a person to look at, with its secrets redacted (the
        reason too: a normaliser's message may quote the value it could not read)."""
        reason = self.redactor.text(reason)
        log.warning("unreadable %s payload: %s", platform, reason)
        text = orjson.dumps(self.redactor.data(payload)).decode()
        async with self._writer, self.store.transaction():
            await self.store.quarantine(platform, reason, text, format_time(self.clock.now()))
