"""The fake Discord with application commands: a bot may overwrite its own application's
global commands (`PUT /applications/{application}/commands`, a JSON list) and list them; what
each application has is in `commands`."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from fakes.discord import FakeDiscord, Json, _error, _json, _Req

__all__ = ["FakeDiscordWithCommands"]


class FakeDiscordWithCommands(FakeDiscord):
    """`FakeDiscord`, and the application commands each application has (`commands`)."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.commands: dict[str, list[Json]] = {}
        self._listed: list[Json] = []
        path = r"/applications/(?P<aid>\d+)/commands"
        self._routes += [("PUT", path, self._overwrite), ("GET", path, self._list)]

    async def _rest(self, request: web.Request) -> web.Response:
        # The base hands a route only a JSON object; a bulk overwrite's body is a list.
        body = await request.json() if request.content_type == "application/json" else None
        self._listed = body if isinstance(body, list) else []
        return await super()._rest(request)

    async def _overwrite(self, req: _Req) -> web.Response:
        application = req.args["aid"]
        if application != req.bot.application_id:
            return _error(403, "Missing Access", 50001)
        self.commands[application] = [
            {**command, "id": self._snowflake(), "application_id": application, "version": "1"}
            for command in self._listed
        ]
        return _json(self.commands[application])

    async def _list(self, req: _Req) -> web.Response:
        return _json(self.commands.get(req.args["aid"], []))
