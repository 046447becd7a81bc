"""Gateway sessions that outlive the process: RESUME where the last run stopped, never end one.

Discord replays every dispatch after a given sequence to a client that RESUMEs its session,
and nothing to one that IDENTIFYs afresh. So the live path keeps, in the ledger, each bot's
session id, resume URL and the sequence of the last dispatch whose event is committed
(`core.store.GatewaySession`, one per shard), and the next start RESUMEs from there: what was
said while the host was down, and what it had read but not yet committed when it died, comes
again, and the ledger's one-event-per-id drops what it already holds.

The seam is discord.py's own: `Client.connect` and the shards of an `AutoShardedClient` build
each socket with `DiscordWebSocket.from_client(..., session=, sequence=, resume=)`, looked up by
that name in `discord.client` and `discord.shard`. `install()` puts `ResumingWebSocket` there.
For a client that is not a `SessionOwner` it is discord.py's socket unchanged; for one that is:

- a socket about to IDENTIFY first asks the owner for a kept session of its shard (`resume_from`,
  asked once per shard), and RESUMEs that one instead; if Discord answers INVALID_SESSION (op 9,
  d=false), discord.py IDENTIFYs as usual and the owner catches up another way;
- every gateway message goes to the owner's `take` with the socket, synchronously and in
  arrival order (discord.py calls `log_receive` before it parses the message), instead of the
  `on_socket_raw_receive` event;
- a close never uses 1000 or 1001, the codes that end a session: `Client.close` and
  `Shard.close` ask for 1000, and get 4000, which leaves the session resumable.
"""

from __future__ import annotations

from typing import Any, Final, Protocol, Self, runtime_checkable

import discord
import discord.client
import discord.gateway
import discord.shard
import yarl

from core.store import GatewaySession

__all__ = ["UNSHARDED", "ResumingWebSocket", "SessionOwner", "install", "shard_key"]

UNSHARDED: Final = -1
"""The ledger's shard number for a plain (unsharded) connection."""

_SESSION_ENDING: Final = frozenset({1000, 1001})
_KEEPS_SESSION: Final = 4000


def shard_key(shard_id: int | None) -> int:
    """The ledger's shard number for discord.py's `shard_id` (`None` when unsharded)."""
    return UNSHARDED if shard_id is None else shard_id


@runtime_checkable
class SessionOwner(Protocol):
    """What a client's connection offers the socket: a kept session, and every message."""

    def resume_from(self, shard: int) -> GatewaySession | None:
        """The session to RESUME on `shard` instead of IDENTIFYing, or None; asked once."""
        ...

    def take(self, raw: str, socket: ResumingWebSocket) -> None:
        """One gateway message as text, in arrival order, with the socket it came on."""
        ...


def _owner(client: discord.Client) -> SessionOwner | None:
    owner = getattr(client, "session_owner", None)
    return owner if isinstance(owner, SessionOwner) else None


class ResumingWebSocket(discord.gateway.DiscordWebSocket):
    """discord.py's gateway socket, resuming kept sessions and never ending one (see above)."""

    owner: SessionOwner | None = None

    @classmethod
    async def from_client(cls, client: discord.Client, **options: Any) -> Self:
        # `options` are discord.py's own (`initial`, `gateway`, `shard_id`, `session`,
        # `sequence`, `resume`, ...), passed on as they come unless a kept session replaces them.
        owner = _owner(client)
        kept = None
        if owner is not None and not options.get("resume"):
            kept = owner.resume_from(shard_key(options.get("shard_id")))
        if kept is not None:
            options.update(resume=True, session=kept.session_id, sequence=kept.seq)
            options["gateway"] = yarl.URL(kept.resume_url)
        socket = await super().from_client(client, **options)
        socket.owner = owner
        return socket

    def debug_log_receive(self, data: Any, /) -> None:
        # discord.py wires this in when the client has enable_debug_events; HELLO arrives
        # before `owner` is set and is no dispatch, so nothing is missed.
        if self.owner is None:
            super().debug_log_receive(data)
        else:
            self.owner.take(data, self)

    async def close(self, code: int = _KEEPS_SESSION) -> None:
        if self.owner is not None and code in _SESSION_ENDING:
            code = _KEEPS_SESSION
        await super().close(code)


def install() -> None:
    """Make discord.py build its gateway sockets as `ResumingWebSocket` (idempotent; a client
    that is not a `SessionOwner` sees no difference)."""
    discord.client.DiscordWebSocket = ResumingWebSocket  # type: ignore[misc]
    discord.shard.DiscordWebSocket = ResumingWebSocket  # type: ignore[misc]
