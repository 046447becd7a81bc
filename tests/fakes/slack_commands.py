"""The fake Slack's slash commands: the payload Slack sends an app when someone runs one (over
Socket Mode in a `slash_commands` envelope, over HTTP as a signed form-encoded POST), and the
`response_url` the app answers through, served on 127.0.0.1 and recorded."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any, Self
from urllib.parse import urlencode

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer
from fakes.slack import FakeSlack, sign
from fakes.slack_interactive import APP_ID

__all__ = ["Responses", "form_post", "run_over_socket", "slash_command"]


def slash_command(
    text: str, *, user: str, response_url: str, channel: str = "C0GEN", team: str = "T111"
) -> dict[str, str]:
    """What Slack sends when `user` runs `/c2a <text>` in `channel`: every field a string, as
    in its form post."""
    return {
        "token": "verification-token-not-a-secret",
        "team_id": team,
        "team_domain": "fake",
        "channel_id": channel,
        "channel_name": channel.lower(),
        "user_id": user,
        "user_name": user.lower(),
        "command": "/c2a",
        "text": text,
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": "1.2.trigger",
    }


async def form_post(url: str, payload: dict[str, str], secret: str) -> int:
    """POST a slash command to an HTTP-mode app as Slack does (form-encoded, signed); returns
    the HTTP status."""
    raw = urlencode(payload).encode()
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        **sign(raw, secret, int(time.time())),
    }
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=raw, headers=headers) as response,
    ):
        return response.status


async def run_over_socket(
    slack: FakeSlack, text: str, *, user: str, responses: Responses, app_token: str | None = None
) -> dict[str, Any]:
    """Run `/c2a <text>` as `user` over Socket Mode; returns the app's answer at the
    `response_url`."""
    url = responses.url()
    payload = slash_command(text, user=user, response_url=url)
    await slack.send_event(payload, app_token=app_token, envelope_type="slash_commands")
    return await responses.answer(url)


class Responses:
    """Slack's `response_url`s: each `url()` is a fresh one; what an app posts to it is kept in
    `posted` by URL. Waits are bounded by `wait_timeout`."""

    def __init__(self, *, wait_timeout: float = 5.0) -> None:
        self.wait_timeout = wait_timeout
        self.posted: dict[str, dict[str, Any]] = {}
        self.port = 0
        self._numbers = itertools.count(1)
        self._changed = asyncio.Event()
        self._server: TestServer | None = None

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/commands/{number}", self._posted)
        self._server = TestServer(app, host="127.0.0.1")
        await self._server.start_server()
        self.port = int(self._server.port or 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            await self._server.close()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/commands/{next(self._numbers)}"

    async def answer(self, url: str) -> dict[str, Any]:
        """What the app posted to `url`, once it has."""
        try:
            async with asyncio.timeout(self.wait_timeout):
                while url not in self.posted:
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            raise TimeoutError(f"Responses: nothing posted to {url}") from None
        return self.posted[url]

    async def _posted(self, request: web.Request) -> web.Response:
        self.posted[str(request.url.with_query(None))] = await request.json()
        self._changed.set()
        return web.Response(text="ok")
