"""The live Slack connections: one slack-bolt `AsyncApp` per agent, receiving over Socket Mode
or the HTTP Events API and handing every event to one `receive` callback before Slack is
acknowledged.

Each agent is its own Slack app (its own bot user and tokens), so each gets its own
`SlackAgentConnection`; `SlackWorkspaceConnections` starts one for every agent of a workspace
manifest that has a Slack binding, all feeding the same `receive` (the host's). This module
translates and transports; it never decides.

Durable before the ack: `receive` runs first (`adapters.slack.take_in`). Over Socket Mode an
`events_api` envelope goes to it ahead of bolt and is acknowledged only once `receive` has
returned; bolt still handles every other envelope (commands, interactivity). Over HTTP it runs
in a middleware in bolt's `before_authorize` slot, which bolt applies after verifying the
request signature and before `auth.test`, the self-event filter and every listener; bolt
acknowledges an event only when a listener has matched and run, so by the time Slack is
acknowledged the event is in the ledger. Every event type the app subscribes to (`BOT_EVENTS`)
has a listener, because an unmatched event gets a 404 from bolt, which Slack would redeliver.

A `receive` that raises does not kill the connection: one line is logged, the request gets a
500 (Socket Mode: no acknowledgement at all) and Slack redelivers it, up to three times; the
ledger makes the redelivery harmless if the first attempt had in fact been stored.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Self

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from adapters import Receive
from adapters.slack.manifest import Mode, SlackAgent, SlackWorkspace
from adapters.slack.signed_request import MAX_BODY_BYTES, read_signed
from adapters.slack.take_in import EventsFirst, ReceiveStats, TakeIn
from core.errors import ManifestError, PayloadError
from core.manifest import Workspace

__all__ = [
    "BOT_EVENTS",
    "DEFAULT_API_URL",
    "EVENTS_PATH",
    "Receive",
    "ReceiveStats",
    "SlackAgentConnection",
    "SlackWorkspaceConnections",
    "api_base",
]

log = logging.getLogger(__name__)


# The bot events every agent's Slack app subscribes to; each gets a listener (see above).
BOT_EVENTS = (
    "message",
    "app_mention",
    "reaction_added",
    "reaction_removed",
    "member_joined_channel",
    "member_left_channel",
)
DEFAULT_API_URL = AsyncWebClient.BASE_URL
EVENTS_PATH = "/slack/events/{agent}"
# How long `close` lets envelopes already being taken in finish before it hangs up.
_DRAIN_SECONDS = 5.0


async def _taken() -> None:
    """The listener for every subscribed event: the middleware already took the event in, and
    bolt acknowledges it when this listener has matched."""


class SlackAgentConnection:
    """One agent's Slack app, connected over Socket Mode (`mode="socket"`, the default: no public
    URL needed) or serving the HTTP Events API (`mode="http"`: `handle` is the request handler,
    mounted by `SlackWorkspaceConnections`).

    Every Slack call, Socket Mode's `apps.connections.open` included, goes to `api_url`. Bolt's
    self-event filter is off: the engine handles the agent's own messages itself, and the filter
    would drop the edits and deletes of them (the take-in runs before it anyway, so the filter
    could only stop listeners). Tokens are held, never logged.
    """

    def __init__(
        self,
        agent: str,
        receive: Receive,
        *,
        bot_token: str,
        app_token: str | None = None,
        signing_secret: str | None = None,
        api_url: str | None = None,
        mode: Mode = "socket",
    ) -> None:
        if mode == "socket" and not app_token:
            raise ValueError(f"slack {agent}: Socket Mode needs an app-level token")
        if mode == "http" and not signing_secret:
            # An empty secret would make any request's signature easy to forge.
            raise ValueError(f"slack {agent}: HTTP mode needs a signing secret")
        self.agent = agent
        self.mode: Mode = mode
        self.stats = ReceiveStats()
        self._app_token = app_token
        self._verifier = (
            SignatureVerifier(signing_secret) if mode == "http" and signing_secret else None
        )
        self._take_in = TakeIn(agent, receive, self.stats)
        base_url = api_url or DEFAULT_API_URL
        self.app = AsyncApp(
            name=f"c2a-{agent}",
            client=AsyncWebClient(token=bot_token, base_url=_with_slash(base_url)),
            # An explicit "" keeps bolt from reading SLACK_SIGNING_SECRET; Socket Mode skips it.
            signing_secret=signing_secret or "",
            before_authorize=self._take_in,
            ignoring_self_events_enabled=False,
            attaching_conversation_kwargs_enabled=False,
        )
        for event_type in BOT_EVENTS:
            self.app.event(event_type)(_taken)
        self._handler: AsyncSocketModeHandler | None = None

    async def start(self) -> None:
        """Socket Mode: open the connection (the SDK reconnects on its own after a `disconnect`
        envelope or a dropped socket). HTTP mode: nothing to open."""
        if self.mode != "socket" or self._handler is not None:
            return
        # The handler's client opens an aiohttp session and a task: it needs the running loop.
        self._handler = EventsFirst(self.app, self._app_token, self._take_in)
        await _connect(self._handler)
        log.info("slack %s: connected over Socket Mode", self.agent)

    async def close(self) -> None:
        """Take no new envelope in; let those already being taken in finish, acknowledgement
        included (bounded), then hang up."""
        self._take_in.closing = True
        in_flight = self._take_in.in_flight - {asyncio.current_task()}
        if in_flight:
            await asyncio.wait(in_flight, timeout=_DRAIN_SECONDS)
        if self._handler is not None:
            handler, self._handler = self._handler, None
            await _close(handler)

    async def handle(self, request: web.Request) -> web.Response:
        """The HTTP Events API endpoint: a request is refused with a 4xx and one log line, never
        reaching bolt or `receive`, unless it is small, signed within the last five minutes and a
        well-formed body (`read_signed`: 413, 401, 400); bolt then answers `url_verification`
        and takes events in."""
        if self._verifier is None:
            raise RuntimeError(f"slack {self.agent}: not in HTTP mode")
        try:
            bolt_request = await read_signed(request, self._verifier)
        except PayloadError as refused:
            status = int(refused.details["status"])
            log.info("slack %s: answered %d: %s", self.agent, status, refused)
            return web.Response(status=status, text=refused.message)
        response = await self.app.async_dispatch(bolt_request)
        return await to_aiohttp_response(response)


async def _connect(handler: AsyncSocketModeHandler) -> None:
    await handler.connect_async()  # type: ignore[no-untyped-call]  # unannotated in slack-bolt


async def _close(handler: AsyncSocketModeHandler) -> None:
    await handler.close_async()  # type: ignore[no-untyped-call]  # unannotated in slack-bolt


def api_base(workspace: Workspace) -> str:
    """Where this workspace's Slack Web API is (`slack.api_url`, else Slack's own), ending in
    `/` as slack-sdk needs."""
    slack = SlackWorkspace.of(workspace.manifest)
    return _with_slash(slack.api_url if slack and slack.api_url else DEFAULT_API_URL)


def _with_slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"


class SlackWorkspaceConnections:
    """Every Slack-bound agent of one workspace, connected, all feeding one `receive`.

    In HTTP mode one aiohttp server on `host:port` serves every agent's app, each at
    `/slack/events/<agent>` (its Request URL in the Slack app settings); `port=0` lets the OS
    pick, and `port` tells which it picked once started.
    """

    def __init__(
        self,
        connections: Sequence[SlackAgentConnection],
        *,
        host: str = "127.0.0.1",
        port: int = 3000,
    ) -> None:
        self.connections = {c.agent: c for c in connections}
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    @classmethod
    def from_workspace(
        cls,
        workspace: Workspace,
        receive: Receive,
        *,
        mode: Mode | None = None,
        environ: Mapping[str, str] | None = None,
        host: str | None = None,
        port: int | None = None,
    ) -> Self:
        """A connection for each agent with a Slack binding that names a bot token variable.
        `mode`, `host` and `port` default to the manifest's (`slack.mode`, `slack.listen`).

        Raises `ManifestError` naming the agent and the variable when a variable the mode needs
        is not named or not set (its value is never shown).
        """
        env = os.environ if environ is None else environ
        settings = SlackWorkspace.of(workspace.manifest) or _DEFAULTS
        mode = mode or settings.mode
        connections = []
        for agent, config in workspace.manifest.agents.items():
            slack = SlackAgent.of(config)
            if slack is None or slack.bot_token_env is None:
                continue
            app_token = signing_secret = None
            if mode == "socket":
                app_token = _secret(env, agent, "app_token_env", slack.app_token_env)
            else:
                signing_secret = _secret(env, agent, "signing_secret_env", slack.signing_secret_env)
            connection = SlackAgentConnection(
                agent,
                receive,
                bot_token=_secret(env, agent, "bot_token_env", slack.bot_token_env),
                app_token=app_token,
                signing_secret=signing_secret,
                api_url=settings.api_url,
                mode=mode,
            )
            connections.append(connection)
        listen = settings.listen
        return cls(
            connections,
            host=listen.host if host is None else host,
            port=listen.port if port is None else port,
        )

    async def start(self) -> None:
        """Connect every Socket Mode agent, then serve every HTTP-mode agent."""
        await asyncio.gather(*(c.start() for c in self.connections.values()))
        served = {a: c for a, c in self.connections.items() if c.mode == "http"}
        if served and self._runner is None:
            app = web.Application(client_max_size=MAX_BODY_BYTES)
            for agent, connection in served.items():
                app.router.add_post(EVENTS_PATH.format(agent=agent), connection.handle)
            self._runner = web.AppRunner(app, access_log=None)
            await self._runner.setup()
            await web.TCPSite(self._runner, self.host, self.port).start()
            self.port = self._runner.addresses[0][1]
            log.info(
                "slack: serving the Events API for %s on port %d", ", ".join(served), self.port
            )

    async def close(self) -> None:
        """Stop serving (in-flight requests finish), then close every connection."""
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()
        await asyncio.gather(*(c.close() for c in self.connections.values()))

    async def __aenter__(self) -> Self:
        try:
            await self.start()
        except BaseException:
            await self.close()  # the agents that did connect must not linger
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


_DEFAULTS = SlackWorkspace(team_id="T0")  # what a manifest without a `slack:` section means


def _secret(env: Mapping[str, str], agent: str, key: str, variable: str | None) -> str:
    if not variable:
        raise ManifestError(
            f"agents.{agent}.slack.{key} is needed to connect {agent} to Slack",
            {"agent": agent, "key": key},
        )
    value = env.get(variable)
    if not value:
        raise ManifestError(
            f"agents.{agent}.slack.{key} names {variable}, which is not set",
            {"agent": agent, "key": key, "variable": variable},
        )
    return value
