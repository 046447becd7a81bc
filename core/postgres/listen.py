"""Wake-ups between processes sharing one PostgreSQL ledger: `Listener` holds a connection of
its own that LISTENs on the ledger's channel (`core.postgres.connection.channel`) and hands
each notification's payload (`deliveries <agent>`, `outbox`) to a callback, instead of every
process polling the ledger.

A notification is sent only when the transaction that made the work commits, so what it
announces is there to be read. When the connection drops (the server restarted), the listener
connects again at once and then every `RETRY` seconds until the server answers (said once each
way, `core.postgres.outage`), and on reconnecting hands `*` to the callback: what was notified
meanwhile was lost, so everything is to be looked at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import psycopg
from psycopg import sql

from core.postgres import outage
from core.postgres.connection import channel, where

__all__ = ["EVERYTHING", "RETRY", "Listener"]

log = logging.getLogger(__name__)

EVERYTHING = "*"
RETRY = 1.0


class Listener:
    """The notifications of the ledger at `url` (in the PostgreSQL schema `schema`)."""

    def __init__(self, url: str, schema: str | None, retry: float = RETRY) -> None:
        self.url = url
        self.channel = channel(schema)
        self.retry = retry
        self.listening = asyncio.Event()

    async def run(self, heard: Callable[[str], None]) -> None:
        """Call `heard(payload)` for every notification until cancelled."""
        first = True
        at = where(self.url)
        while True:
            try:
                db = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
            except psycopg.Error as exc:
                outage.unreachable(at, exc)
                await asyncio.sleep(self.retry)
                continue
            outage.reachable(at)
            try:
                async with db:
                    await db.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    self.listening.set()
                    if not first:
                        heard(EVERYTHING)
                    first = False
                    async for notification in db.notifies():
                        heard(notification.payload)
            except psycopg.Error as exc:
                self.listening.clear()
                outage.lost(at)
                log.debug("no wake-ups from %s (%s); listening again", at, exc)
