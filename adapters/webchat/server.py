"""The web chat: a small chat platform on 127.0.0.1 that needs no account, and its live adapter.

`WebChat` serves one page (`page/`) and a websocket, to that page only: every request needs
the run's token, this server's Host and, from a browser, this page's Origin
(`adapters.webchat.access`). People pick who they are from the manifest's `webchat.humans`,
talk in its channels, threads and DMs with each agent, @mention agents and roles, react, edit,
delete and type; agents do the same through the outbox (`adapters.webchat.send`). Every
change is first kept by the platform (`History`), then handed to the host as a payload
(`Receive`), which makes it durable and decides; only then is it shown to the browsers. An
agent's own posts come back to the host the same way, as they do on Slack and Discord.

Beside each message the page shows the attention model at work: for every agent, the
directedness, policy, injection mode and reason the core chose, then the disposition as the
agent acts (claimed, responded, deferred, ...), and which agent holds the message's claim. The
page reads these from the ledger, never from the harness: `WebChat` polls the store's deliveries
of recent messages and pushes what changed. It also shows which model answers each agent, and
whether that model is ready yet, as the harnesses describe it (`models`, given by `c2a run`).

Browser → server, one JSON object per websocket message (`op` first), done by
`adapters.webchat.browser`: `post {as, channel, thread?, text}` (`/c2a ...` as the text is the
command, answered to that browser alone), `edit {as, id, text}`, `delete {as, id}`,
`react {as, id, emoji}`, `unreact {as, id, emoji}`, `typing {as, channel, thread?}`.
Server → browser: `hello {workspace, humans, agents, roles, channels, messages, models}`,
`message {message}`, `attention {id, agents}`, `typing {user, channel, thread, on}`,
`models {models}` (agent → `{model, where, state, since, log, detail, hint}`, when it changes),
`notice {text}` (a `/c2a` answer), `error {text}`. A malformed request gets an `error` naming
what is wrong; the socket stays open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

from adapters import Receive
from adapters.webchat.access import Access, guard, secure_headers, url_host
from adapters.webchat.asks import Asks, press_handler
from adapters.webchat.attention import attention_of_people
from adapters.webchat.browser import BINARY_REFUSED, answer_browser
from adapters.webchat.history import History, Message
from adapters.webchat.manifest import WebchatWorkspace
from adapters.webchat.normalise import (
    PLATFORM,
    dm_channel,
    find_mentions,
    is_dm,
    kept_under,
    lacked,
)
from core.actions import Ask
from core.approvals import Approvals
from core.clock import Clock, format_time
from core.command_answers import Commands
from core.manifest import Workspace
from core.redact import Redactor, new_token
from core.store import Store

__all__ = ["WebChat"]

log = logging.getLogger(__name__)

ATTENTION_EVERY = 0.3
RECENT = 60  # messages whose attention is watched
_PAGE = files("adapters.webchat") / "page"
_ASSETS = {
    "/": "index.html",
    "/page.js": "page.js",
    "/text.js": "text.js",
    "/page.css": "page.css",
    "/favicon.ico": "icon.svg",  # asked for by every browser, whatever the page links
}
_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
}

Models = Callable[[], Mapping[str, Mapping[str, Any]]]
"""Which model answers each agent, and whether it is ready: agent → its description."""


class WebChat:
    """One workspace's web chat: its page, its record, and its side of the host."""

    def __init__(
        self,
        workspace: Workspace,
        receive: Receive,
        store: Store,
        clock: Clock,
        *,
        history: Path | None = None,
        port: int | None = None,
        token: str | None = None,
        redactor: Redactor | None = None,
        models: Models | None = None,
        approvals: Approvals | None = None,
        commands: Commands | None = None,
    ) -> None:
        """`redactor` blanks secrets in what people post before the record keeps it (the
        record is a file on this machine, like the ledger); by default, by shape only.
        `approvals` decides the questions asked with buttons (`adapters.webchat.asks`);
        `commands` answers `/c2a` typed in the page."""
        self.config = WebchatWorkspace.of(workspace.manifest) or WebchatWorkspace()
        self.workspace = workspace.manifest.workspace
        self.agents = list(workspace.agent_ids)
        self.roles = list(workspace.manifest.roles)
        self.receive = receive
        self.store = store
        self.clock = clock
        self.history = History(history)
        self.redactor = redactor or Redactor(shapes=workspace.secrets)
        self.port = self.config.port if port is None else port
        self.access = Access(token or new_token(), self.config)
        # Each open page's socket, and the people it has spoken as (whom `tell` reaches there).
        self._sockets: dict[web.WebSocketResponse, set[str]] = {}
        self._lock = asyncio.Lock()
        self._shown: dict[str, list[dict[str, Any]]] = {}
        self._models: Models = models or (lambda: {})
        self._shown_models: dict[str, dict[str, Any]] = {}
        self._runner: web.AppRunner | None = None
        self._watch: asyncio.Task[None] | None = None
        self.approvals = approvals
        self.commands = commands
        self.asks = Asks()

    @property
    def origin(self) -> str:
        """Where the page is served, `http://host:port`."""
        return f"http://{url_host(self.config.host)}:{self.port}"

    def link(self, path: str = "/") -> str:
        """A URL of the page's server with the run's token in it."""
        return f"{self.origin}{path}?token={self.access.token}"

    @property
    def url(self) -> str:
        """The URL to open: the page, with the run's token."""
        return self.link("/")

    # -- running --------------------------------------------------------------------------

    async def start(self) -> str:
        """Read the record back and hand the host what its ledger lacks (`lacked`: what a crash
        cut off between keeping and handing over, so nothing said is lost; never what a record
        holds from before a new ledger, as a first run on Slack or Discord reads no history),
        seat every agent in every channel, then serve the page. Returns its URL."""
        payloads = self.history.load()
        ids = kept_under(payloads)
        held = await self.store.held([event_id for each in ids for event_id in each])
        lacking, older = lacked(payloads, ids, held)
        for payload in lacking:
            await self.receive(PLATFORM, payload, self._via(payload))
        if older:
            said = "message(s) from before this ledger; they stay on the page, unanswered"
            log.warning("%s: the web chat's record holds %d %s", self.workspace, older, said)
        for channel in self.config.channels:
            for agent in self.agents:
                joined = {"type": "member_joined", "channel": channel, "user": agent}
                if not self.history.has_member(channel, agent):
                    await self._record(joined)
        app = web.Application(middlewares=[guard(self.access)])
        app.on_response_prepare.append(secure_headers)
        for path in _ASSETS:
            app.router.add_get(path, self._asset)
        app.router.add_get("/ws", self._socket)
        app.router.add_post("/approve", press_handler(self.approvals, self.config.humans))
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.config.host, self.port)
        await site.start()
        if self.port == 0:
            self.port = self._runner.addresses[0][1]
        self._watch = asyncio.create_task(self._watch_attention(), name="webchat-attention")
        return self.url

    async def close(self) -> None:
        """Stop taking messages: the sockets close, then the page."""
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
        for socket in list(self._sockets):
            await socket.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def forget(self, before: datetime) -> int:
        """Retention: the record drops the threads quiet since `before` (`History.forget`), and
        the open pages drop them too; returns how many messages went."""
        gone = self.history.forget(before)
        if gone:
            self._shown = {i: a for i, a in self._shown.items() if i in self.history.messages}
            await self._broadcast({"op": "forgotten", "ids": gone})
        return len(gone)

    # -- what people and agents do ----------------------------------------------------------

    async def say(
        self,
        user: str,
        channel: str,
        text: str,
        *,
        thread: str | None = None,
        reply_to: str | None = None,
        key: str | None = None,
        mentions: Mapping[str, list[str]] | None = None,
    ) -> Message:
        """Post a message. A person's mentions are read from the text; an agent's are only
        those it chose (`mentions`), whatever its text says."""
        if mentions is None:
            mentions = self._mentions_in(text)
        async with self._lock:
            payload = {
                "type": "message",
                "id": self.history.next_id(),
                "channel": channel,
                "thread": thread,
                "user": user,
                "text": text,
                "mentions": dict(mentions),
                "replyTo": reply_to,
                "key": key,
            }
            message = await self._record(payload)
        assert message is not None
        return message

    async def change(self, kind: str, user: str, message_id: str, **fields: str) -> Message:
        """Edit, delete, or add or remove a reaction on a message. A deleted message is gone:
        it cannot be edited or reacted to (`LookupError`), and deleting it again changes
        nothing."""
        message = self.history.messages.get(message_id)
        if message is None:
            raise LookupError(f"no message {message_id}")
        if message.deleted:
            if kind == "delete":
                return message
            raise LookupError(f"message {message_id} was deleted")
        payload: dict[str, Any] = {
            "type": kind,
            "id": message_id,
            "channel": message.channel,
            "thread": message.thread,
            "user": user,
            "itemUser": message.user,
            **fields,
        }
        if kind == "edit":
            # An agent's edit keeps the mentions it chose; a person's are read again.
            edited = message.mentions if user in self.agents else self._mentions_in(fields["text"])
            payload["mentions"] = edited
        async with self._lock:
            changed = await self._record(payload)
        assert changed is not None
        return changed

    def _mentions_in(self, text: str) -> dict[str, list[str]]:
        found = find_mentions(text, [*self.agents, *self.config.humans], self.roles)
        return {
            "users": list(found.users),
            "roles": list(found.roles),
            "broadcast": [b.value for b in found.broadcast],
        }

    async def typing(self, user: str, channel: str, thread: str | None, on: bool) -> None:
        """Someone is typing: a person's typing goes to the host, everyone's to the page."""
        if on and user not in self.agents:
            payload = {"type": "typing", "channel": channel, "thread": thread, "user": user}
            await self._record(payload)
        await self._broadcast(
            {"op": "typing", "user": user, "channel": channel, "thread": thread, "on": on}
        )

    async def _record(self, payload: dict[str, Any]) -> Message | None:
        """Keep, hand to the host (durable when this returns), then show."""
        payload = {**payload, "workspace": self.workspace, "ts": format_time(self.clock.now())}
        payload = self.redactor.data(payload)
        message = self.history.record(payload)
        await self.receive(PLATFORM, payload, self._via(payload))
        if message is not None:
            await self._broadcast({"op": "message", "message": message.view()})
        return message

    def _via(self, payload: Mapping[str, Any]) -> str | None:
        """The agent whose DM this is: that agent's connection received it."""
        channel = str(payload.get("channel", ""))
        agent = channel.rsplit(":", 1)[-1] if is_dm(channel) else None
        return agent if agent in self.agents else None

    # -- the page -----------------------------------------------------------------------------

    async def _asset(self, request: web.Request) -> web.Response:
        name = _ASSETS[request.path]
        body = (_PAGE / name).read_text(encoding="utf-8")
        content_type = _TYPES[name[name.rindex(".") :]]
        return web.Response(text=body, content_type=content_type)

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse(heartbeat=20)
        await socket.prepare(request)
        people: set[str] = set()
        self._sockets[socket] = people
        try:
            await socket.send_json(self._hello())
            for message_id, agents in list(self._shown.items()):
                await socket.send_json({"op": "attention", "id": message_id, "agents": agents})
            async for frame in socket:
                if frame.type is WSMsgType.BINARY:
                    reply: dict[str, Any] | None = BINARY_REFUSED
                elif frame.type is WSMsgType.TEXT:
                    reply = await answer_browser(self, frame.data, people)
                else:
                    continue
                if reply is not None:
                    await socket.send_json(reply)
        finally:
            self._sockets.pop(socket, None)
        return socket

    def _hello(self) -> dict[str, Any]:
        return {
            "op": "hello",
            "workspace": self.workspace,
            "humans": self.config.humans,
            "agents": self.agents,
            "roles": self.roles,
            "channels": self.config.channels,
            "dms": {h: {a: dm_channel(h, a) for a in self.agents} for h in self.config.humans},
            "messages": [m.view() for m in self.history],
            "models": self.models(),
            "asks": list(self.asks.open.values()),
        }

    def models(self) -> dict[str, dict[str, Any]]:
        """Which model answers each agent, as its harness says now."""
        return {agent: dict(view) for agent, view in self._models().items()}

    async def show_draft(self, message: Message, text: str) -> None:
        """Redraw a message being written on every open page, recording nothing: the page's
        `message` frame replaces the message with that id where it stands."""
        await self._broadcast({"op": "message", "message": {**message.view(), "text": text}})

    async def show_ask(self, message_id: str, action: Ask) -> None:
        """Show an ask's buttons under its message on every open page, or clear them."""
        await self._broadcast(self.asks.shown(message_id, action))

    async def tell(self, person: str, text: str) -> int:
        """Show `text` to `person` alone, as a `/c2a` answer is shown: on the open pages that
        have spoken as them, recording nothing. Returns how many pages it reached."""
        pages = [socket for socket, people in list(self._sockets.items()) if person in people]
        await self._send({"op": "notice", "text": text}, pages)
        return len(pages)

    async def _broadcast(self, body: dict[str, Any]) -> None:
        await self._send(body, list(self._sockets))

    async def _send(self, body: dict[str, Any], sockets: list[web.WebSocketResponse]) -> None:
        for socket in sockets:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await socket.send_json(body)

    # -- the attention model, made visible -----------------------------------------------------

    async def _watch_attention(self) -> None:
        while True:
            try:
                await self.refresh_attention()
                await self.refresh_models()
            except Exception as exc:  # the page must not stop updating for one bad read
                log.warning("webchat: reading decisions failed: %s", exc)
            await asyncio.sleep(ATTENTION_EVERY)

    async def refresh_models(self) -> None:
        """Push the agents' models when one changed (a build ended, say)."""
        models = self.models()
        if models != self._shown_models:
            self._shown_models = models
            await self._broadcast({"op": "models", "models": models})

    async def refresh_attention(self) -> None:
        """Push the decisions and dispositions of recent messages that changed."""
        recent = list(self.history)[-RECENT:]
        now = self.clock.now()
        shown = await attention_of_people(self.store, self.workspace, self.agents, recent, now)
        for message_id, agents in shown.items():
            if agents and agents != self._shown.get(message_id):
                self._shown[message_id] = agents
                await self._broadcast({"op": "attention", "id": message_id, "agents": agents})
