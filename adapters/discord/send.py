"""The outbound Discord side: `DiscordSender`, the `core.outbox.Sender` that posts through
discord.py, one logged-in client per agent (each agent is its own bot).

Actions, matched on their type:

- `Post`: the parts `adapters.discord.render` makes, in order, where
  `adapters.discord.places` says (the thread, the conversation or a DM, the first part
  replying to the message answered). Each part
  carries a nonce derived from the key with `enforce_nonce`, so a retry within Discord's nonce
  window returns the first message instead of posting a second. The post's files go with its
  last part, one multipart message (`discord.File`s), under that part's nonce.
- `React`: the workspace's glyph for the signal, then the agent's own reactions that the signal
  supersedes (working → done) are taken off the message.
- `Working`: typing (`adapters.discord.indicator`), until cleared, a post by the same agent
  in that channel, or a hard timeout.
- `Edit` and `Delete`: the agent's own message, rendered as a post is.
- `Ask`: a question with a button per choice, then redrawn with who decided
  (`adapters.discord.asks`).

Failures are mapped at this boundary (`adapters.discord.failures`).

`find` looks for this bot's messages holding the rendered parts in order in the channel's
history (`adapters.discord.places`). Parts found while others are missing are remembered, so
the `send` that follows posts only the rest.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Mapping, Sequence
from typing import Any

import discord

from adapters.discord.asks import Asks
from adapters.discord.clients import read_tokens, use_endpoints
from adapters.discord.failures import Retry, describe, failure, raise_as
from adapters.discord.files import fetch_file
from adapters.discord.indicator import Typing
from adapters.discord.manifest import DiscordWorkspace
from adapters.discord.places import Places, channel_id, message_in, own_id, sent
from adapters.discord.render import (
    AllowedMentionsPayload,
    RenderedMessage,
    RenderedPart,
    render_reaction,
    render_send,
)
from core.actions import Action, Ask, Delete, Edit, Post, React, Unreact, Working
from core.attachments import Attachment
from core.errors import PermanentSendError, RenderError, TransientSendError
from core.manifest import Workspace
from core.post_files import PostFile
from core.signals import GlyphMap, taken_off

__all__ = ["DiscordSender"]


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
        self._retrying = Retry(attempts, backoff)
        self.places = Places(self._retrying, history_limit)
        self.typing = Typing(self._retrying, typing_timeout)
        self.asks = Asks(self.places, self._retrying)
        self._landed: dict[str, dict[int, str]] = {}  # key -> part index -> message id

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
        await self.typing.close()
        for client in self._owned:
            await client.close()
        self._owned.clear()

    # -- the Sender port ----------------------------------------------------------------------

    async def send(self, action: Action) -> dict[str, Any]:
        """Perform the action; returns what identifies the result (`messageId`, ...)."""
        match action:
            case Post():
                return await self._send_message(action)
            case React():
                return await self._react(action)
            case Unreact():
                return await self._unreact(action)
            case Working():
                return await self._set_typing(action)
            case Edit() | Delete():
                return await self._change(action)
            case Ask():
                return await self.asks.ask(self._client(action.agent), action)

    async def fetch_file(self, agent: str, attachment: Attachment, limit: int) -> bytes:
        """`core.attachments.FileFetcher`: an attachment's bytes from Discord's CDN."""
        settings = DiscordWorkspace.of(self.workspace.manifest)
        return await fetch_file(attachment, limit, settings.api_url if settings else None)

    async def find(self, action: Action) -> dict[str, Any] | None:
        """An earlier attempt of a post found in the channel, or None; anything else is always
        None (doing it again is harmless). Raises `TransientSendError` when Discord cannot be
        asked now: an unanswered question is never taken for "not there"."""
        if not isinstance(action, Post):
            return None
        try:
            rendered = self._render(action)
            client = self._client(action.agent)
        except PermanentSendError:
            return None  # the send that follows says why it cannot be done
        key = action.key
        try:
            channel, _ = await self.places.destination(client, action, rendered)
            found = await self.places.posted(client, channel, rendered)
        except (discord.Forbidden, discord.NotFound, PermanentSendError):
            return None  # nothing to find there; the send will say why it fails
        except Exception as exc:
            raise TransientSendError(
                f"discord: could not look for {key} in the channel: {describe(exc)}"
            ) from exc
        if len(found) < len(rendered.parts):
            if found:
                self._landed[key] = found
            return None
        self._landed.pop(key, None)
        return sent(channel, found)

    # -- send ---------------------------------------------------------------------------------

    async def _send_message(self, action: Post) -> dict[str, Any]:
        rendered = self._render(action)
        client = self._client(action.agent)
        key = action.key
        try:
            channel, reference = await self.places.destination(client, action, rendered)
        except Exception as exc:
            raise_as(exc, f"finding where to send {key}", idempotent=True)

        async def post(part: RenderedPart, first: bool, last: bool) -> discord.Message:
            allowed = _allowed(part.allowed_mentions)
            ping = part.allowed_mentions["replied_user"]
            files = _files(action.files) if last else []  # fresh each try: a send reads them
            send = functools.partial(
                channel.send,
                part.text,
                nonce=part.nonce,
                allowed_mentions=allowed,
                mention_author=ping,
                files=files,
            )
            if first and reference is not None:  # only the first part is the reply
                return await send(reference=reference)
            return await send()

        landed = self._landed.setdefault(key, {})
        for index, part in enumerate(rendered.parts):
            if index in landed:
                continue
            try:
                last = index == len(rendered.parts) - 1
                message = await self._retrying(functools.partial(post, part, index == 0, last))
            except Exception as exc:
                # Once a part is visible, only `find` may decide what is still to be sent.
                what = f"sending part {index + 1} of {key}"
                error = failure(exc, what, idempotent=False, partial=bool(landed))
                if isinstance(error, PermanentSendError):
                    del self._landed[key]  # never sent again: nothing left to remember
                if error is exc:
                    raise
                raise error from exc
            landed[index] = str(message.id)
        del self._landed[key]
        await self.typing.stop(action.agent, channel.id)
        return sent(channel, landed)

    # -- react --------------------------------------------------------------------------------

    async def _react(self, action: React) -> dict[str, Any]:
        try:
            reaction = render_reaction(action, self.glyphs)
        except RenderError as exc:
            raise PermanentSendError(str(exc), exc.details) from exc
        client = self._client(action.agent)
        message = message_in(client, action.conversation, action.message_id)
        what = f"the {reaction.signal.value} reaction on message {message.id}"
        me = discord.Object(own_id(client))
        removed: list[str] = []
        try:
            await self._retrying(lambda: message.add_reaction(reaction.glyph))
            stale = taken_off(reaction.signal, action.placed)
            if stale is None:  # not known: what it supersedes, found on the message
                stale = reaction.superseded
            if stale:
                current = await self._retrying(message.fetch)
                for placed in current.reactions:
                    glyph = str(placed.emoji)
                    signal = self.glyphs.signal_for("discord", glyph)
                    if placed.me and signal in stale and glyph != reaction.glyph:
                        remove = functools.partial(message.remove_reaction, placed.emoji, me)
                        await self._retrying(remove)
                        removed.append(glyph)
        except discord.NotFound:
            # The message was deleted before the signal went out: there is nothing to mark.
            return {"messageId": str(message.id), "emoji": reaction.glyph, "gone": True}
        except Exception as exc:
            raise_as(exc, what, idempotent=True)
        return {"messageId": str(message.id), "emoji": reaction.glyph, "removed": removed}

    async def _unreact(self, action: Unreact) -> dict[str, Any]:
        """The agent's reaction of that signal taken off; done already when it is not there."""
        client = self._client(action.agent)
        message = message_in(client, action.conversation, action.message_id)
        glyph = self.glyphs.native("discord", action.signal)
        remove = functools.partial(message.remove_reaction, glyph, discord.Object(own_id(client)))
        try:
            await self._retrying(remove)
        except discord.NotFound:  # the message, or the reaction, is gone already
            return {"messageId": str(message.id), "removed": [], "gone": True}
        except Exception as exc:
            what = f"taking the {action.signal.value} reaction off message {message.id}"
            raise_as(exc, what, idempotent=True)
        return {"messageId": str(message.id), "removed": [glyph]}

    # -- the agent's own messages ------------------------------------------------------------

    async def _change(self, action: Edit | Delete) -> dict[str, Any]:
        """Edit (same rendering and allowed mentions as a post) or delete an agent's message.
        Both are harmless to repeat; deleting a message that is already gone is success."""
        client = self._client(action.agent)
        message = message_in(client, action.thread or action.conversation, action.message_id)
        if isinstance(action, Delete):
            try:
                await self._retrying(message.delete)
            except discord.NotFound:
                pass
            except Exception as exc:
                raise_as(exc, f"deleting message {message.id}", idempotent=True)
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
            raise_as(exc, f"editing message {message.id}", idempotent=True)
        return {"messageId": str(message.id)}

    # -- typing -------------------------------------------------------------------------------

    async def _set_typing(self, action: Working) -> dict[str, Any]:
        client = self._client(action.agent)
        where = channel_id(action.thread or action.conversation)
        if not action.on:
            return await self.typing.stop(action.agent, where)
        channel = client.get_partial_messageable(where)
        return await self.typing.start(action.agent, channel, action.timeout_s)

    # -- plumbing -----------------------------------------------------------------------------

    def _render(self, action: Post | Edit) -> RenderedMessage:
        try:
            return render_send(action, self.workspace)
        except RenderError as exc:
            raise PermanentSendError(str(exc), exc.details) from exc

    def _client(self, agent: str) -> discord.Client:
        client = self._clients.get(agent)
        if client is None:
            raise PermanentSendError(
                f"agent {agent!r} has no Discord connection (agents.{agent}.discord.token_env)",
                {"agent": agent},
            )
        return client


def _files(files: Sequence[PostFile]) -> list[discord.File]:
    return [discord.File(io.BytesIO(f.content.encode()), filename=f.name) for f in files]


def _allowed(payload: AllowedMentionsPayload) -> discord.AllowedMentions:
    return discord.AllowedMentions(
        everyone=False,
        users=[discord.Object(int(i)) for i in payload["users"]],
        roles=[discord.Object(int(i)) for i in payload["roles"]],
        replied_user=payload["replied_user"],
    )
