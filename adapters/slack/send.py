"""Slack's outbound side: `SlackSender`, the `core.outbox.Sender` that performs what the outbox
holds as the agent each action names, and pattern-matches on the typed action to the part that
owns it:

- `adapters.slack.posts`: posts (split, paced, tagged with their key), `find`, edits, deletes;
- `adapters.slack.indicators`: signal reactions and the working indicator (thread status);
- `adapters.slack.webapi`: the per-agent Web API clients, the calls and their error mapping,
  and `verify`, the startup check of every token;
- `adapters.slack.scopes`: the scopes each method and event needs;
- `adapters.slack.pacing`: one message a second per channel.

Nothing here may post a message twice (see `adapters.slack.webapi` for how failures map).
`verify`, `api_error` and the scope tables are re-exported from here for their callers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.asks import Asks
from adapters.slack.files import fetch_file
from adapters.slack.indicators import Reactions
from adapters.slack.pacing import ChannelPacer, Sleep
from adapters.slack.posts import Lookup, Messages, Replied
from adapters.slack.webapi import HttpPool, WebApi
from core.actions import Action, Ask, Delete, Edit, Post, React, Unreact, Working
from core.attachments import Attachment
from core.clock import Clock
from core.manifest import Workspace
from core.signals import GlyphMap

__all__ = ["SlackSender"]


class SlackSender:
    """`core.outbox.Sender` for one workspace's Slack agents.

    `Post` is chat.postMessage (chat.postEphemeral for visibility `ephemeral`, a DM for
    visibility `dm`), `React` reactions.add with the workspace's glyph for the signal (then
    the status reactions it supersedes come off), `Working` assistant.threads.setStatus
    outside DMs (cleared with `""`), `Edit` chat.update, `Delete` chat.delete, and `Ask` a
    message with buttons (`adapters.slack.asks`). `lookup`
    (the host's `Engine.event`) tells who wrote the message being answered, for ephemeral
    messages and DMs and for thread placement. Raises ManifestError when a bot token variable
    the manifest names is not set.
    """

    def __init__(
        self,
        workspace: Workspace,
        environ: Mapping[str, str] | None = None,
        *,
        lookup: Lookup | None = None,
        glyphs: GlyphMap | None = None,
        clock: Clock,
        pacer: ChannelPacer | None = None,
        sleep: Sleep = asyncio.sleep,
        timeout: int = 30,
        max_retry_after: float = 5.0,
        rate_limit_attempts: int = 3,
        lookback: timedelta = timedelta(days=1),
    ) -> None:
        self.workspace = workspace
        self.glyphs = glyphs or workspace.glyphs
        self.pacer = pacer or ChannelPacer(sleep=sleep)
        # One connection pool for every call this sender makes, closed by `close`.
        self.pool = HttpPool(timeout)
        api = WebApi(
            workspace,
            environ,
            sleep=sleep,
            timeout=timeout,
            max_retry_after=max_retry_after,
            rate_limit_attempts=rate_limit_attempts,
            pool=self.pool,
        )
        # A draft met by a 429 is dropped, not waited for: the streamed reply sees it fail
        # and slows its redraws (`harness_bridge.streamed_reply` owns the pace).
        drafts = WebApi(
            workspace, environ, sleep=sleep, timeout=timeout, rate_limit_attempts=1, pool=self.pool
        )
        replied = Replied(workspace, lookup)
        self._api = api
        self._messages = Messages(api, replied, self.pacer, clock, lookback, drafts=drafts)
        self._reactions = Reactions(api, self.glyphs, replied)
        self._asks = Asks(api, replied)

    @property
    def clients(self) -> Mapping[str, AsyncWebClient]:
        """Each agent's Web API client (its bot token), for read-only lookups elsewhere."""
        return dict(self._api.clients)

    async def close(self) -> None:
        """Close the connection pool (at shutdown, once nothing more is sent)."""
        await self.pool.close()

    async def send(self, action: Action) -> dict[str, Any]:
        """Perform one action; raises TransientSendError, PermanentSendError, or anything else
        (SendOutcomeUnknown, a timeout) when it may have landed."""
        match action:
            case Post():
                return await self._messages.post(action)
            case Edit():
                return await self._messages.edit(action)
            case Delete():
                return await self._messages.delete(action)
            case React():
                return await self._reactions.react(action)
            case Unreact():
                return await self._reactions.unreact(action)
            case Working():
                return await self._reactions.status(action)
            case Ask():
                return await self._asks.ask(action)

    async def fetch_file(self, agent: str, attachment: Attachment, limit: int) -> bytes:
        """`core.attachments.FileFetcher`: a file's bytes read with `agent`'s bot token."""
        return await fetch_file("slack", self._api.clients.get(agent), attachment, limit)

    async def find(self, action: Action) -> dict[str, Any] | None:
        """An earlier attempt of a post (see `Messages.find`); None for anything else, which is
        harmless to do again."""
        match action:
            case Post():
                return await self._messages.find(action)
            case _:
                return None
