"""The live Discord receive path: one discord.py client per agent, raw gateway dispatches in.

Each agent is its own Discord bot, so each gets its own `discord.Client` and gateway session.
A connection hands the host the *raw* dispatch frames (`{"op": 0, "t": NAME, "s": N, "d": {...}}`)
that `adapters.discord.normalise` reads, so the live path and `c2a replay` share one normaliser
and discord.py's cache is never consulted; which frames are handed over is
`adapters.discord.frames`'.

How frames are taken: every bot's gateway socket is `adapters.discord.resume`'s, which hands
each complete gateway message, as text, after the transport decompression and before discord.py
parses it, to the connection's `take`, synchronously and in arrival order. The connection queues
the dispatches, and `adapters.discord.handover` hands them to `receive` in that order, several
at once so that those arriving together share a commit, and an edit never overtakes the message
it edits.

Sessions that outlive the process (with a `store`): after a dispatch's event is committed (or
the dispatch is one the normaliser does not read), the connection records in the ledger that
its session stands at that dispatch's sequence (`adapters.discord.sessions`). The next start
RESUMEs from there (`adapters.discord.resume`), so Discord replays what was said while the host
was down and what was read but not committed when it died; a graceful stop closes with 4000,
which keeps the session. When Discord refuses the session, the new session's READY makes the
connection catch up from message history first (`adapters.discord.catchup`, bounded by the
manifest's `discord.catch_up` window), before any dispatch of the new session is handed over.

Durability and repeats are the host's: `receive` commits each event to the ledger before any
harness sees it, and the ledger keeps one event per id, so the frames a gateway RESUME replays
and the copies every bot gets of one guild message are each one event. A dispatch the ledger
cannot take yet (unreachable, a commit refused) is handed over again until it is taken, since
Discord sends it once; a `receive` that raises anything else is logged in one line and the
connection goes on.

Sharding (`adapters.discord.clients`) changes none of this: every shard's frames come through
the same hook into the same queue. Starting the bots of a workspace is `adapters.discord.bots`';
with several processes on one ledger, each shard is one connection in the process holding its
lease (`adapters.discord.held_shards`).

Message Content is a privileged intent. A bot without it is closed by the gateway with 4014
(discord.py raises `PrivilegedIntentsRequired`); the connection then says so in one line and
reconnects in mention-only mode, where Discord still sends the text of DMs and of messages that
mention the bot. `DiscordAgentConnection.mode` tells later code which mode a connection is in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Final

import discord
import orjson

from adapters import Receive
from adapters.discord import resume
from adapters.discord.catchup import catch_up
from adapters.discord.clients import ContentMode, new_client
from adapters.discord.frames import Item, to_item, withheld
from adapters.discord.handover import HandOver
from adapters.discord.interactions import Interactions
from adapters.discord.manifest import DiscordCatchUp
from adapters.discord.normalise import PLATFORM
from adapters.discord.sessions import KeptSessions
from adapters.discord.sharding import Sharding
from core.clock import Clock, parse_time
from core.errors import StoreError
from core.postgres.outage import during_outage
from core.store import GatewaySession, Store

__all__ = [
    "NO_MESSAGE_CONTENT",
    "DiscordAgentConnection",
    "Receive",
]

log = logging.getLogger(__name__)


NO_MESSAGE_CONTENT: Final = (
    "discord agent %s: the bot lacks the Message Content intent (gateway close 4014), so it "
    "runs mention-only: only DMs and messages that mention it carry text; to fix, enable "
    "Bot > Privileged Gateway Intents > Message Content Intent for its application at "
    "https://discord.com/developers/applications and restart"
)
"""The one line logged (with the agent id) when a bot falls back to mention-only mode."""

_READY_GRACE: Final = 10.0  # seconds past guild_ready_timeout a catch-up waits for the guild cache

RETRY_FIRST: Final = 0.1
RETRY_MOST: Final = 5.0
"""Seconds before a dispatch the ledger could not take is handed over again: the first wait,
doubled each time up to the last."""


class DiscordAgentConnection:
    """One agent's bot on the Discord gateway, forwarding what it receives to `receive`.

    `start()` runs it in a task, `wait_ready()` waits for discord.py's `on_ready`, `close()`
    stops it after handing over the frames already received. A connection that ends by itself
    (a rejected token, a gateway that refuses it) logs why in one line and keeps the error in
    `failure`. The token is never logged and is not part of `repr`. With `sharding` it runs an
    `AutoShardedClient` over those shards, else a plain `Client`. With a `store` its gateway
    sessions outlive the process and a lost one is caught up from history within `catch_up`
    (see the module's docstring); `clock` stamps the ledger's session records. Interactions
    (which discord.py parses, not `receive`) go to `interactions`.
    """

    def __init__(
        self,
        agent: str,
        token: str,
        receive: Receive,
        *,
        guild_id: str | None = None,
        guild_ready_timeout: float = 2.0,
        drain_timeout: float = 5.0,
        sharding: Sharding | None = None,
        store: Store | None = None,
        clock: Clock,
        catch_up: DiscordCatchUp | None = None,
        interactions: Interactions | None = None,
    ) -> None:
        self.agent = agent
        self._interactions = interactions
        self._token = token
        self._receive = receive
        self._guild_id = guild_id
        self._guild_ready_timeout = guild_ready_timeout
        self._drain_timeout = drain_timeout
        self._sharding = sharding
        self._mode = ContentMode.FULL
        self._client: discord.Client | None = None
        self._store = store
        self._clock = clock
        self._catch_up = catch_up or DiscordCatchUp()
        self._sessions = KeptSessions(agent, store, clock)
        self._frames: asyncio.Queue[Item] = asyncio.Queue()
        self._ready = asyncio.Event()
        self._ended = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self.failure: BaseException | None = None

    def __repr__(self) -> str:
        return f"<DiscordAgentConnection agent={self.agent!r} mode={self._mode.value}>"

    @property
    def mode(self) -> ContentMode:
        """`mention_only` once the gateway refused the Message Content intent."""
        return self._mode

    @property
    def client(self) -> discord.Client | None:
        """The current discord.py client (a new one after the mention-only fallback): an
        `AutoShardedClient` when the connection is sharded."""
        return self._client

    @property
    def sharding(self) -> Sharding | None:
        """The shards this connection runs, or `None` for a plain client."""
        return self._sharding

    def start(self) -> None:
        """Connect in a background task; call once, from a running event loop."""
        if self._task is not None:
            raise RuntimeError(f"discord agent {self.agent}: already started")
        self._task = asyncio.create_task(self._run(), name=f"c2a discord {self.agent}")

    async def wait_ready(self) -> None:
        """Wait until discord.py is ready (`guild_ready_timeout` after the last GUILD_CREATE).

        Raises `ConnectionError` (from the cause) if the connection ended first. Unbounded:
        callers put it under `asyncio.timeout`.
        """
        waits = [asyncio.ensure_future(e.wait()) for e in (self._ready, self._ended)]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
            await asyncio.gather(*waits, return_exceptions=True)
        if not self._ready.is_set():
            raise ConnectionError(
                f"discord agent {self.agent}: the connection ended before it was ready"
            ) from self.failure

    async def close(self) -> None:
        """Disconnect, hand the frames already received to `receive`, and stop. Never raises
        for a connection that failed by itself: that is in `failure`."""
        self._closing = True
        if self._client is not None:
            await self._client.close()
        if self._task is not None:
            await asyncio.wait([self._task])

    # -- inside the task -----------------------------------------------------------------------

    async def _run(self) -> None:
        handing = HandOver(self._frames, self._hand_over, self._sessions.keep, self._catch_up_from)
        forwarder = asyncio.create_task(handing.run(), name=f"c2a discord {self.agent} frames")
        try:
            await self._sessions.load()
            await self._connect()
        except Exception as exc:
            self.failure = exc
            log.error("discord agent %s: connection ended: %s: %s", self.agent, _kind(exc), exc)
        finally:
            self._ended.set()
            await self._drain(forwarder)

    async def _connect(self) -> None:
        while not self._closing:
            client = new_client(self, self._mode, self._guild_ready_timeout, self._sharding)
            self._client = client
            try:
                async with client:
                    await client.start(self._token)
                return
            except discord.PrivilegedIntentsRequired:
                # Message Content is the only privileged intent asked for, so it is the one.
                if self._mode is ContentMode.MENTION_ONLY:
                    raise
                log.warning(NO_MESSAGE_CONTENT, self.agent)
                self._mode = ContentMode.MENTION_ONLY

    def on_client_ready(self, *, resumed: bool) -> None:
        """discord.py is ready, or resumed its session (`adapters.discord.clients.Owner`)."""
        client = self._client
        if not self._ready.is_set() and client is not None:
            shards = ""
            if isinstance(client, discord.AutoShardedClient):
                shards = f", shards {sorted(client.shards)} of {client.shard_count}"
            how = "resumed its gateway session" if resumed else "ready"
            log.info(
                "discord agent %s: %s as %s (%s%s)",
                self.agent,
                how,
                client.user,
                self._mode,
                shards,
            )
        self._ready.set()

    async def on_client_interaction(self, interaction: discord.Interaction) -> None:
        """An interaction for this bot (`adapters.discord.clients.Owner`)."""
        if self._interactions is not None:
            await self._interactions.take(self.agent, interaction)

    # -- the session owner (adapters.discord.resume) --------------------------------------------

    def resume_from(self, shard: int) -> GatewaySession | None:
        """The kept session to RESUME on `shard`, once; None to IDENTIFY."""
        return self._sessions.resume_from(shard)

    def take(self, raw: str, socket: resume.ResumingWebSocket) -> None:
        """Queue one gateway message if it is a dispatch (see the module's docstring)."""
        try:
            frame = orjson.loads(raw)
        except orjson.JSONDecodeError:
            log.warning("discord agent %s: skipped a gateway message that is not JSON", self.agent)
            return
        shard = resume.shard_key(socket.shard_id)
        url = str(socket.gateway)
        item = to_item(
            frame, self.agent, shard, socket.session_id, url, self._sessions.kept, self._guild_id
        )
        if item is not None:
            self._frames.put_nowait(item)

    # -- inside the task, again ------------------------------------------------------------------

    async def _hand_over(self, frame: dict[str, Any]) -> bool:
        """Give one dispatch to `receive`. While the ledger cannot take it (`StoreError`: out
        of reach, a commit refused) try again, `RETRY_FIRST` seconds later and twice as long
        each time up to `RETRY_MOST`, until it does or the connection closes: Discord sends a
        dispatch once, and the session's mark waits behind this one meanwhile (a restart
        RESUMEs from before it). Anything else is logged in one line and gives False."""
        if self._mode is ContentMode.MENTION_ONLY:
            frame = withheld(frame)
        delay = RETRY_FIRST
        while True:
            try:
                await self._receive(PLATFORM, frame, self.agent)
            except StoreError as exc:
                said = log.debug if during_outage(exc) or delay > RETRY_FIRST else log.warning
                said(
                    "discord agent %s: %s (seq %s) could not be stored yet, trying again: %s",
                    self.agent,
                    frame.get("t"),
                    frame.get("s"),
                    exc,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MOST)
                continue
            except Exception as exc:
                log.error(
                    "discord agent %s: %s (seq %s) was not received: %s: %s",
                    self.agent,
                    frame.get("t"),
                    frame.get("s"),
                    _kind(exc),
                    exc,
                )
                return False
            return True

    async def _catch_up_from(self, since: str) -> None:
        """The session that stood at `since` is lost: read what was missed from history."""
        client = self._client
        if self._store is None or client is None:
            return
        log.info(
            "discord agent %s: the gateway session could not be resumed; catching up from "
            "history since %s",
            self.agent,
            since,
        )
        with contextlib.suppress(TimeoutError):  # the guild cache, filled before on_ready
            async with asyncio.timeout(self._guild_ready_timeout + _READY_GRACE):
                await self._ready.wait()
        try:
            await catch_up(
                client,
                self.agent,
                self._hand_over,
                self._store,
                guild_id=self._guild_id,
                since=parse_time(since),
                now=self._clock.now(),
                window=self._catch_up,
            )
        except Exception as exc:
            log.error("discord agent %s: catching up failed: %s: %s", self.agent, _kind(exc), exc)

    async def _drain(self, forwarder: asyncio.Task[None]) -> None:
        try:
            async with asyncio.timeout(self._drain_timeout):
                await self._frames.join()
        except TimeoutError:
            log.warning(
                "discord agent %s: closed with %d received frames not yet handed over",
                self.agent,
                self._frames.qsize(),
            )
        finally:
            forwarder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await forwarder


def _kind(exc: BaseException) -> str:
    return type(exc).__name__
