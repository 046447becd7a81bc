"""The outbound Discord side: `DiscordSender`, the `core.outbox.Sender` that posts through
discord.py, one logged-in client per agent (each agent is its own bot).

Actions, by their `action` field:

- `send`: the parts `adapters.discord.render` makes, posted in order into the thread when the
  action names one, else the conversation; the first part replies (`message_reference`) to the
  message the action answers. `visibility: dm` (and `ephemeral`, which a bot cannot post outside
  an interaction) goes to a DM with the `user:` recipient or the author of the message
  answered, unless the conversation already is that DM. Each part carries a nonce derived from
  the idempotency key with `enforce_nonce`, so a retry within Discord's nonce window returns
  the first message instead of posting a second.
- `react`: the workspace's glyph for the signal, then the agent's own reactions that the signal
  supersedes (working → done) are taken off the message.
- `typing`: `state: start` shows typing through discord.py's typing context (refreshed by
  discord.py) until `state: stop`, a `send` by the same agent in that channel, or a hard timeout.

Failures, mapped at this boundary: 403/404 and other refusals are `PermanentSendError`; a 429
that discord.py's own rate-limit handling gave up on, or a connection that never opened, is
`TransientSendError`; 5xx answers and broken connections are retried (tenacity, bounded, same
nonce). When those retries run out, a reaction or typing is `TransientSendError` (adding a
reaction twice is harmless), but a message may have been posted, so `SendOutcomeUnknown` is raised
and the outbox marks the action ambiguous and calls `find` before any resend.

`find` looks in the channel's history (after the message answered, else the latest messages)
for this bot's messages holding the rendered parts in order: a message whose `nonce` Discord
returned must carry the part's nonce, otherwise its content must equal the part (history does
not return nonces). Parts found while others are missing are remembered, so the `send` that
follows posts only the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, NoReturn, TypeVar

import aiohttp
import discord
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from adapters.discord.live import read_tokens, use_endpoints
from adapters.discord.manifest import DiscordWorkspace
from adapters.discord.render import (
    AllowedMentionsPayload,
    RenderedMessage,
    RenderedPart,
    render_reaction,
    render_send,
)
from core.errors import (
    PermanentSendError,
    RenderError,
    SendError,
    SendOutcomeUnknown,
    TransientSendError,
)
from core.manifest import Workspace
from core.signals import GlyphMap

__all__ = ["DiscordSender"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_Messageable = discord.PartialMessageable | discord.DMChannel

_PRIVATE: Final = frozenset({"dm", "ephemeral"})


class DiscordSender:
    """Sends outbox actions to Discord as the agent each action names.

    `clients` maps agent ids to logged-in discord.py clients (the live connections' clients
    will do, or those `connect` logs in); an agent with no client gets `PermanentSendError`.
    `attempts` and `backoff` bound the tenacity retries of 5xx and network failures;
    `history_limit` bounds how many messages `find` reads; `typing_timeout` is the longest
    typing is ever shown. Call `close()` at the end: it stops typing and closes the clients
    `connect` created.
    """

    def __init__(
        self,
        workspace: Workspace,
        clients: Mapping[str, discord.Client],
        *,
        glyphs: GlyphMap | None = None,
        attempts: int = 3,
        backoff: float = 0.5,
        history_limit: int = 200,
        typing_timeout: float = 120.0,
    ) -> None:
        self.workspace = workspace
        self.glyphs = glyphs or workspace.glyphs
        self._clients = clients
        self._owned: list[discord.Client] = []
        self._attempts = attempts
        self._backoff = backoff
        self._history_limit = history_limit
        self._typing_timeout = typing_timeout
        self._dm: dict[int, bool] = {}  # channel id -> is a DM; a channel's type never changes
        self._landed: dict[str, dict[int, str]] = {}  # key -> part index -> message id
        self._typing: dict[tuple[str, int], asyncio.Task[None]] = {}

    @classmethod
    async def connect(
        cls,
        workspace: Workspace,
        *,
        environ: Mapping[str, str] | None = None,
        max_ratelimit_timeout: float = 30.0,
        **options: Any,
    ) -> DiscordSender:
        """Log in a REST-only client (no gateway) for every agent with a Discord `token_env`.

        Tokens come from `environ` (default `os.environ`) and are never logged; the manifest's
        `discord.api_url` is applied first. A rate limit longer than `max_ratelimit_timeout`
        seconds (at least 30) is a `TransientSendError` instead of a wait. Raises
        `ManifestError` naming every unset variable, and discord.py's `LoginFailure` for a
        rejected token (closing what it opened). `options` go to `DiscordSender`.
        """
        tokens = read_tokens(workspace, environ)
        settings = DiscordWorkspace.of(workspace.manifest)
        if settings is not None:
            use_endpoints(settings.api_url, None)
        clients: dict[str, discord.Client] = {}
        sender = cls(workspace, clients, **options)
        try:
            for agent, token in tokens.items():
                # No gateway: the intents only keep discord.py from warning about its cache.
                client = discord.Client(
                    intents=discord.Intents(guilds=True),
                    max_ratelimit_timeout=max_ratelimit_timeout,
                )
                sender._owned.append(client)
                await client.login(token)
                clients[agent] = client
        except BaseException:
            await sender.close()
            raise
        return sender

    async def close(self) -> None:
        """Stop every typing indicator and close the clients `connect` logged in."""
        for task in self._typing.values():
            task.cancel()
        await asyncio.gather(*self._typing.values(), return_exceptions=True)
        self._typing.clear()
        for client in self._owned:
            await client.close()
        self._owned.clear()

    # -- the Sender port ----------------------------------------------------------------------

    async def send(self, action: Mapping[str, Any]) -> dict[str, Any]:
        """Perform the action; returns what identifies the result (`messageId`, ...)."""
        kind = action.get("action")
        if kind == "send":
            return await self._send_message(action)
        if kind == "react":
            return await self._react(action)
        if kind == "typing":
            return await self._set_typing(action)
        if kind in ("edit", "delete"):
            return await self._change(action, delete=kind == "delete")
        raise PermanentSendError(f"discord cannot perform action {kind!r}", {"action": kind})

    async def find(self, action: Mapping[str, Any]) -> dict[str, Any] | None:
        """An earlier attempt of a "send" found in the channel, or None; reactions and typing
        are always None (doing them again is harmless). Raises `TransientSendError` when
        Discord cannot be asked now: an unanswered question is never taken for "not there"."""
        if action.get("action") != "send":
            return None
        try:
            rendered = self._render(action)
            client = self._client(action)
        except PermanentSendError:
            return None  # the send that follows says why it cannot be done
        key = str(action["idempotencyKey"])
        try:
            channel, _ = await self._destination(client, action, rendered)
            found = await self._look(client, channel, rendered)
        except (discord.Forbidden, discord.NotFound, PermanentSendError):
            return None  # nothing to find there; the send will say why it fails
        except Exception as exc:
            raise TransientSendError(
                f"discord: could not look for {key} in the channel: {_describe(exc)}"
            ) from exc
        if len(found) < len(rendered.parts):
            if found:
                self._landed[key] = found
            return None
        self._landed.pop(key, None)
        return _sent(channel, found)

    # -- send ---------------------------------------------------------------------------------

    async def _send_message(self, action: Mapping[str, Any]) -> dict[str, Any]:
        rendered = self._render(action)
        client = self._client(action)
        key = str(action["idempotencyKey"])
        try:
            channel, reference = await self._destination(client, action, rendered)
        except Exception as exc:
            _raise(exc, f"finding where to send {key}", idempotent=True)

        async def post(part: RenderedPart, first: bool) -> discord.Message:
            allowed = _allowed(part.allowed_mentions)
            ping = part.allowed_mentions["replied_user"]
            if first and reference is not None:
                return await channel.send(
                    part.text,
                    nonce=part.nonce,
                    allowed_mentions=allowed,
                    mention_author=ping,
                    reference=reference,
                )
            return await channel.send(
                part.text, nonce=part.nonce, allowed_mentions=allowed, mention_author=ping
            )

        landed = self._landed.setdefault(key, {})
        for index, part in enumerate(rendered.parts):
            if index in landed:
                continue
            try:
                message = await self._retrying(functools.partial(post, part, index == 0))
            except Exception as exc:
                # Once a part is visible, only `find` may decide what is still to be sent.
                what = f"sending part {index + 1} of {key}"
                error = _failure(exc, what, idempotent=False, partial=bool(landed))
                if isinstance(error, PermanentSendError):
                    del self._landed[key]  # never sent again: nothing left to remember
                if error is exc:
                    raise
                raise error from exc
            landed[index] = str(message.id)
        del self._landed[key]
        await self._stop_typing(str(action["agent"]), channel.id)
        return _sent(channel, landed)

    async def _destination(
        self, client: discord.Client, action: Mapping[str, Any], rendered: RenderedMessage
    ) -> tuple[_Messageable, discord.MessageReference | None]:
        """The channel to post in and the reference of the first part."""
        where = _channel_id(action.get("thread") or action.get("conversation"))
        channel = client.get_partial_messageable(where)
        if action.get("visibility") in _PRIVATE and not await self._is_dm(client, where):
            recipient = _dm_recipient(action)
            answered = rendered.reply_to
            if recipient is None and answered is not None:
                message = await self._retrying(lambda: channel.fetch_message(int(answered)))
                recipient = message.author.id
            if recipient is None:
                raise PermanentSendError(
                    "a Discord DM needs a user: recipient or a message to answer",
                    {"visibility": action.get("visibility")},
                )
            user = discord.Object(recipient)
            return await self._retrying(lambda: client.create_dm(user)), None
        if rendered.reply_to is None:
            return channel, None
        reference = discord.MessageReference(
            message_id=int(rendered.reply_to), channel_id=where, fail_if_not_exists=False
        )
        return channel, reference

    async def _is_dm(self, client: discord.Client, channel_id: int) -> bool:
        if channel_id not in self._dm:
            channel = await self._retrying(lambda: client.fetch_channel(channel_id))
            self._dm[channel_id] = isinstance(channel, discord.DMChannel)
        return self._dm[channel_id]

    async def _look(
        self, client: discord.Client, channel: _Messageable, rendered: RenderedMessage
    ) -> dict[int, str]:
        """The parts this bot already posted: matched in order, from after the message
        answered (oldest first) or among the latest `history_limit` messages."""
        me = _me(client)
        if rendered.reply_to is not None:
            after = discord.Object(int(rendered.reply_to))
            history = channel.history(limit=self._history_limit, after=after, oldest_first=True)
            mine = [m async for m in history if m.author.id == me]
        else:
            history = channel.history(limit=self._history_limit)
            mine = [m async for m in history if m.author.id == me][::-1]
        found: dict[int, str] = {}
        position = 0
        for index, part in enumerate(rendered.parts):
            match = next((i for i in range(position, len(mine)) if _is(mine[i], part)), None)
            if match is None:
                break  # parts are posted in order: a missing one means none after it either
            found[index] = str(mine[match].id)
            position = match + 1
        return found

    # -- react --------------------------------------------------------------------------------

    async def _react(self, action: Mapping[str, Any]) -> dict[str, Any]:
        try:
            reaction = render_reaction(action, self.glyphs)
        except RenderError as exc:
            raise PermanentSendError(str(exc), exc.details) from exc
        client = self._client(action)
        channel = client.get_partial_messageable(_channel_id(action.get("conversation")))
        message = channel.get_partial_message(_channel_id(action.get("messageId")))
        what = f"the {reaction.signal.value} reaction on message {message.id}"
        me = discord.Object(_me(client))
        removed: list[str] = []
        try:
            await self._retrying(lambda: message.add_reaction(reaction.glyph))
            if reaction.superseded:
                current = await self._retrying(message.fetch)
                for placed in current.reactions:
                    glyph = str(placed.emoji)
                    signal = self.glyphs.signal_for("discord", glyph)
                    if placed.me and signal in reaction.superseded and glyph != reaction.glyph:
                        remove = functools.partial(message.remove_reaction, placed.emoji, me)
                        await self._retrying(remove)
                        removed.append(glyph)
        except discord.NotFound:
            # The message was deleted before the signal went out: there is nothing to mark.
            return {"messageId": str(message.id), "emoji": reaction.glyph, "gone": True}
        except Exception as exc:
            _raise(exc, what, idempotent=True)
        return {"messageId": str(message.id), "emoji": reaction.glyph, "removed": removed}

    # -- the agent's own messages ------------------------------------------------------------

    async def _change(self, action: Mapping[str, Any], *, delete: bool) -> dict[str, Any]:
        """Edit (same rendering and allowed mentions as a send) or delete an agent's message.
        Both are harmless to repeat; deleting a message that is already gone is success."""
        client = self._client(action)
        where = _channel_id(action.get("thread") or action.get("conversation"))
        message = client.get_partial_messageable(where).get_partial_message(
            int(str(action["messageId"]))
        )
        if delete:
            try:
                await self._retrying(message.delete)
            except discord.NotFound:
                pass
            except Exception as exc:
                _raise(exc, f"deleting message {message.id}", idempotent=True)
            return {"messageId": str(message.id), "deleted": True}
        parts = self._render(action).parts
        if len(parts) > 1:
            raise PermanentSendError(f"discord: an edit must fit in one message ({message.id})")
        allowed = _allowed(parts[0].allowed_mentions)
        try:
            await self._retrying(
                lambda: message.edit(content=parts[0].text, allowed_mentions=allowed)
            )
        except Exception as exc:
            _raise(exc, f"editing message {message.id}", idempotent=True)
        return {"messageId": str(message.id)}

    # -- typing -------------------------------------------------------------------------------

    async def _set_typing(self, action: Mapping[str, Any]) -> dict[str, Any]:
        agent = str(action.get("agent"))
        client = self._client(action)
        where = _channel_id(action.get("thread") or action.get("conversation"))
        if action.get("state") == "stop":
            await self._stop_typing(agent, where)
            return {"typing": "stopped"}
        if (agent, where) in self._typing:
            return {"typing": "started"}
        requested = action.get("timeoutSeconds")
        timeout = self._typing_timeout
        if isinstance(requested, int | float) and 0 < requested < timeout:
            timeout = float(requested)
        stack = contextlib.AsyncExitStack()
        channel = client.get_partial_messageable(where)
        try:
            # discord.py's typing context: one trigger now, refreshed by discord.py until exit.
            await self._retrying(lambda: stack.enter_async_context(channel.typing()))
        except Exception as exc:
            _raise(exc, f"typing in {where}", idempotent=True)
        task = asyncio.create_task(_hold(stack, timeout), name=f"c2a discord typing {agent}")
        self._typing[agent, where] = task

        def forget(done: asyncio.Task[None]) -> None:
            if self._typing.get((agent, where)) is done:
                del self._typing[agent, where]

        task.add_done_callback(forget)
        return {"typing": "started"}

    async def _stop_typing(self, agent: str, channel_id: int) -> None:
        task = self._typing.pop((agent, channel_id), None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    # -- plumbing -----------------------------------------------------------------------------

    def _render(self, action: Mapping[str, Any]) -> RenderedMessage:
        try:
            return render_send(action, self.workspace)
        except RenderError as exc:
            raise PermanentSendError(str(exc), exc.details) from exc

    def _client(self, action: Mapping[str, Any]) -> discord.Client:
        agent = action.get("agent")
        if not isinstance(agent, str):
            raise PermanentSendError(
                "the action names no agent, so no Discord bot can perform it",
                {"action": action.get("action")},
            )
        client = self._clients.get(agent)
        if client is None:
            raise PermanentSendError(
                f"agent {agent!r} has no Discord connection (agents.{agent}.discord.token_env)",
                {"agent": agent},
            )
        return client

    async def _retrying(self, call: Callable[[], Awaitable[_T]]) -> _T:
        """`call`, retried on 5xx and network failures: bounded, with exponential backoff."""
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._attempts),
            wait=wait_exponential(multiplier=self._backoff, max=8),
            retry=retry_if_exception(_worth_retrying),
            reraise=True,
        )
        # Iterated, not called: tenacity awaits only what it can tell is a coroutine function.
        async for attempt in retrying:
            with attempt:
                return await call()
        raise AssertionError("tenacity ended without a result or an error")  # reraise=True


async def _hold(stack: contextlib.AsyncExitStack, timeout: float) -> None:
    """Keep a typing context open until cancelled or `timeout` passes, then leave it."""
    async with stack:
        await asyncio.sleep(timeout)


def _channel_id(value: object) -> int:
    if isinstance(value, str) and value.isdecimal():
        return int(value)
    raise PermanentSendError(f"not a Discord channel or message id: {value!r}", {"id": value})


def _dm_recipient(action: Mapping[str, Any]) -> int | None:
    for recipient in action.get("mentions") or ():
        kind, _, user_id = str(recipient).partition(":")
        if kind == "user" and user_id.isdecimal():
            return int(user_id)
    return None


def _me(client: discord.Client) -> int:
    if client.user is None:
        raise TransientSendError("the Discord client is not logged in")
    return client.user.id


def _allowed(payload: AllowedMentionsPayload) -> discord.AllowedMentions:
    return discord.AllowedMentions(
        everyone=False,
        users=[discord.Object(int(i)) for i in payload["users"]],
        roles=[discord.Object(int(i)) for i in payload["roles"]],
        replied_user=payload["replied_user"],
    )


def _is(message: discord.Message, part: RenderedPart) -> bool:
    """Whether `message` is `part`: by nonce where Discord returned one, else by content."""
    if message.nonce is not None:
        return str(message.nonce) == part.nonce
    return message.content.strip() == part.text.strip()


def _sent(channel: _Messageable, landed: Mapping[int, str]) -> dict[str, Any]:
    ids = [landed[index] for index in sorted(landed)]
    return {"messageId": ids[0], "messageIds": ids, "channelId": str(channel.id)}


def _worth_retrying(exc: BaseException) -> bool:
    if isinstance(exc, discord.DiscordServerError):
        return True
    return isinstance(exc, aiohttp.ClientError | OSError)


def _raise(exc: Exception, what: str, *, idempotent: bool, partial: bool = False) -> NoReturn:
    """Raise the outbox's reading of a failure that retries did not cure: `idempotent` when
    doing it again is harmless, `partial` when part of a message is already visible."""
    error = _failure(exc, what, idempotent=idempotent, partial=partial)
    if error is exc:
        raise exc
    raise error from exc


def _failure(exc: Exception, what: str, *, idempotent: bool, partial: bool) -> Exception:
    if isinstance(exc, SendError):
        return exc
    details = {"status": getattr(exc, "status", None), "code": getattr(exc, "code", None)}
    message = f"discord: {what}: {_describe(exc)}"
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


def _describe(exc: BaseException) -> str:
    text = str(exc) or "no detail"
    return f"{type(exc).__name__}: {text}"
