"""The fake Discord with application commands: a bot may overwrite its own application's
global commands (`PUT /applications/{application}/commands`, a JSON list) and list them; what
each application has is in `commands`.

A person may run one of them with a subcommand (`interactions.subcommand`), whose `data` is
shaped as Discord sends a chosen subcommand and its options; and a bot that deferred its
answer to a command (callback type 5) writes it with `PATCH
/webhooks/{application}/{token}/messages/@original`: the answer is then the deferred
response's message, kept in `interactions.originals` and nowhere else (ephemeral when the
deferral was)."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from fakes.discord import FakeDiscord, Json, _error, _json, _Req
from fakes.discord_interactions import COMMAND, DEFERRED_MESSAGE, EPHEMERAL, Answer, Interactions

__all__ = ["CommandInteractions", "FakeDiscordWithCommands"]


class CommandInteractions(Interactions):
    """`Interactions`, with subcommands run and deferred answers to commands written."""

    def __init__(self, fake: FakeDiscord) -> None:
        super().__init__(fake)
        self.originals: dict[str, Json] = {}  # interaction id -> its deferred answer's message

    async def subcommand(
        self, channel_id: str, user_id: str, application_id: str, name: str, **options: str
    ) -> Json:
        """`user_id` runs `/c2a <name>` with `options` (strings) in `channel_id`: the
        application's bot is sent it, and it is returned."""
        given = [{"type": 3, "name": key, "value": value} for key, value in options.items()]
        chosen = {"type": 1, "name": name, "options": given}
        data: Json = {"id": self.fake._snowflake(), "name": "c2a", "type": 1, "options": [chosen]}
        return await self._send(COMMAND, channel_id, user_id, data, None, application_id)

    def answer_to(self, interaction: Json) -> tuple[str, bool] | None:
        """What the person who ran a command sees as its answer, and whether only they see it:
        the message of the response, or of the deferred response once written; None before."""
        answers = self.answers(interaction)
        if not answers:
            return None
        (answer,) = answers
        if answer.type != DEFERRED_MESSAGE:
            return str(answer.data.get("content") or ""), answer.ephemeral
        written = self.originals.get(interaction["id"])
        if written is None:
            return None
        return str(written["content"]), bool(written["flags"] & EPHEMERAL)

    async def _edit_original(self, body: Json, query: Any, app: str, token: str) -> Answer:
        sent = next((s for s in self._sent.values() if s.payload["token"] == token), None)
        if sent is None or sent.payload["type"] != COMMAND:
            return await super()._edit_original(body, query, app, token)
        payload = sent.payload
        deferrals = [c for c in self.answers(payload) if c.type == DEFERRED_MESSAGE]
        if payload["application_id"] != app or not deferrals:
            return _error(404, "Unknown Webhook", 10015)
        fake = self.fake
        bot = next(b.user for b in fake.bots if b.application_id == app)
        message = fake._new_message(payload["channel_id"], bot, body)
        del fake.messages[message["id"]]  # seen by the person alone, in no channel's history
        message["flags"] = deferrals[0].data.get("flags") or 0
        message["interaction_metadata"] = {"id": payload["id"], "type": COMMAND}
        self.originals[payload["id"]] = message
        return 200, dict(message)


class FakeDiscordWithCommands(FakeDiscord):
    """`FakeDiscord`, and the application commands each application has (`commands`)."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.interactions: CommandInteractions = CommandInteractions(self)
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
