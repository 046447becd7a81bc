"""The ledger's record of one bot's gateway sessions, one per shard: read at start, RESUMEd
once each, and moved on as the dispatches' events are committed (`adapters.discord.handover`
says when).

The mark is written after the event's own transaction, never before it, so it can only lag;
what it lags by is replayed on RESUME and dropped by the ledger as a repeat. Without a store
nothing is kept and every start IDENTIFYs afresh.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace

from adapters.discord.values import PLATFORM
from core.clock import Clock, format_time
from core.postgres.outage import during_outage
from core.store import GatewaySession, Store

__all__ = ["KeptSessions"]

log = logging.getLogger(__name__)


class KeptSessions:
    """`agent`'s gateway sessions as the ledger (`store`, if any) keeps them."""

    def __init__(self, agent: str, store: Store | None, clock: Clock) -> None:
        self.agent = agent
        self.store = store
        self._clock = clock
        self._kept: dict[int, GatewaySession] = {}  # per shard: where the session stands
        self._unresumed: dict[int, GatewaySession] = {}  # kept sessions not yet RESUMEd

    @property
    def kept(self) -> Mapping[int, GatewaySession]:
        """Per shard, where its session stands."""
        return self._kept

    async def load(self) -> None:
        """Read the kept sessions from the ledger; each may be RESUMEd once."""
        if self.store is None:
            return
        sessions = await self.store.gateway_sessions(PLATFORM, self.agent)
        self._kept = {session.shard: session for session in sessions}
        self._unresumed = dict(self._kept)

    def resume_from(self, shard: int) -> GatewaySession | None:
        """The kept session to RESUME on `shard`, once; None to IDENTIFY."""
        return self._unresumed.pop(shard, None)

    async def keep(self, mark: GatewaySession) -> None:
        """Record in the ledger that the session stands at `mark` (its frame is handled); a
        failure is logged in one line (quietly while the ledger is out of reach, which is said
        once elsewhere) and the mark stays where it was."""
        if self.store is None:
            return
        mark = replace(mark, updated_at=format_time(self._clock.now()))
        try:
            async with self.store.transaction():
                await self.store.save_gateway_session(PLATFORM, mark)
        except Exception as exc:
            said = log.debug if during_outage(exc) else log.error  # said once already
            said(
                "discord agent %s: could not record gateway seq %d: %s: %s",
                self.agent,
                mark.seq,
                type(exc).__name__,
                exc,
            )
            return
        self._kept[mark.shard] = mark
