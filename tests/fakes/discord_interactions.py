"""The fake Discord's interactions, in Discord's wire shapes: what a bot is sent when someone
presses a button of one of its messages (`INTERACTION_CREATE` of type 3, a component) or runs
one of its application commands (type 2), and what it answers.

An interaction goes only to the sessions of the bot whose application it is for, carrying a
`token` that answers it without the bot token. Its callback (`POST
/interactions/{id}/{token}/callback`) is taken once, as Discord takes it: a second is refused
(40060), and so is an update of the message (types 6 and 7) for a command. Answers are kept in
`callbacks`; a message answer (type 4) with flag 64 is ephemeral, seen only by the person who
interacted, and is kept there and nowhere else. Type 7, and `PATCH
/webhooks/{application}/{token}/messages/@original` after a deferral, edit the pressed message.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from fakes.discord import FakeDiscord

__all__ = ["EPHEMERAL", "Callback", "Interactions"]

Json = dict[str, Any]
Answer = tuple[int, Json | None]  # an HTTP status and the JSON body (None: no content)

COMMAND, COMPONENT = 2, 3  # interaction types
MESSAGE, DEFERRED_MESSAGE, DEFERRED_UPDATE, UPDATE = 4, 5, 6, 7  # callback types
EPHEMERAL: Final = 1 << 6
_ANSWERS: Final = {COMMAND: {MESSAGE, DEFERRED_MESSAGE}, COMPONENT: {4, 5, 6, 7}}
_ATTACHMENT_LIMIT: Final = 10 * 1024 * 1024
_MEMBER_PERMISSIONS: Final = str(1 << 6 | 1 << 10 | 1 << 11 | 1 << 14 | 1 << 15 | 1 << 16)


@dataclass(frozen=True, slots=True)
class Callback:
    """One answer a bot gave an interaction: its callback `type` and `data` as sent."""

    interaction_id: str
    token: str
    type: int
    data: Json

    @property
    def ephemeral(self) -> bool:
        return bool(int(self.data.get("flags") or 0) & EPHEMERAL)


@dataclass(slots=True)
class _Sent:
    payload: Json
    answered: bool = False


class Interactions:
    """The interactions `fake` has sent and how bots answered them."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self.callbacks: list[Callback] = []
        self._sent: dict[str, _Sent] = {}  # interaction id -> what was sent
        self._tokens = itertools.count(1)
        callback = r"/interactions/(?P<iid>\d+)/(?P<token>[^/]+)/callback"
        original = r"/webhooks/(?P<app>\d+)/(?P<token>[^/]+)/messages/@original"
        self._routes: list[tuple[str, str, Callable[..., Awaitable[Answer]]]] = [
            ("POST", callback, self._callback),
            ("PATCH", original, self._edit_original),
        ]

    # -- what a person does --------------------------------------------------------------------

    async def press(self, message_id: str, custom_id: str, user_id: str) -> Json:
        """`user_id` presses the button `custom_id` of the stored message `message_id`: its
        author's bot is sent the component interaction, which is returned."""
        message = self.fake.messages[message_id]
        buttons = [c for row in message.get("components") or [] for c in row["components"]]
        button = next(b for b in buttons if b.get("custom_id") == custom_id)
        data = {"custom_id": custom_id, "component_type": button["type"]}
        return await self._send(COMPONENT, message["channel_id"], user_id, data, message)

    async def command(
        self, channel_id: str, user_id: str, application_id: str, name: str, **options: Any
    ) -> Json:
        """`user_id` runs the application command `name` with `options` (strings) in
        `channel_id`: the application's bot is sent it, and it is returned."""
        data: Json = {"id": self.fake._snowflake(), "name": name, "type": 1}
        data["options"] = [{"name": k, "type": 3, "value": v} for k, v in options.items()]
        return await self._send(COMMAND, channel_id, user_id, data, None, application_id)

    def answers(self, interaction: Json) -> list[Callback]:
        """The callbacks a bot gave one interaction."""
        return [c for c in self.callbacks if c.interaction_id == interaction["id"]]

    # -- the wire ------------------------------------------------------------------------------

    async def _send(
        self,
        kind: int,
        channel_id: str,
        user_id: str,
        data: Json,
        message: Any,
        application_id: str | None = None,
    ) -> Json:
        fake = self.fake
        if message is not None:
            author = str(message["author"]["id"])
            application_id = next(b.application_id for b in fake.bots if b.user["id"] == author)
        assert application_id is not None
        payload: Json = {
            "id": fake._snowflake(),
            "application_id": application_id,
            "type": kind,
            "data": data,
            "channel_id": channel_id,
            "token": f"fake-interaction-token-{next(self._tokens)}",
            "version": 1,
            "app_permissions": _MEMBER_PERMISSIONS,
            "locale": "en-US",
            "entitlements": [],
            "attachment_size_limit": _ATTACHMENT_LIMIT,
        }
        if message is not None:
            payload["message"] = message
        if channel_id in fake.channels:
            member = fake.members[user_id]
            payload["channel"] = fake.channels[channel_id]
            payload |= {"guild_id": fake.guild_id, "guild_locale": "en-US", "context": 0}
            payload["authorizing_integration_owners"] = {"0": fake.guild_id}
            payload["member"] = dict(member) | {"permissions": _MEMBER_PERMISSIONS}
        else:
            payload["channel"] = fake.dm_channels[channel_id]
            payload |= {"user": fake.users[user_id], "context": 1}
            payload["authorizing_integration_owners"] = {"1": user_id}
        self._sent[payload["id"]] = _Sent(payload)
        await fake.dispatch_to_application(application_id, "INTERACTION_CREATE", payload)
        return payload

    async def respond(self, method: str, path: str, body: Json, query: Any) -> Answer | None:
        """The answer to a request on an interaction's own routes (no bot token needed), or
        None for any other request."""
        for route_method, pattern, handler in self._routes:
            match = re.fullmatch(pattern, path)
            if method == route_method and match is not None:
                return await handler(body, query, **match.groupdict())
        return None

    async def _callback(self, body: Json, query: Any, iid: str, token: str) -> Answer:
        sent = self._sent.get(iid)
        if sent is None or sent.payload["token"] != token:
            return _error(404, "Unknown interaction", 10062)
        kind = int(body.get("type", 0))
        if kind not in _ANSWERS[sent.payload["type"]]:
            return _error(400, "Invalid Form Body", 50035)
        if sent.answered:
            return _error(400, "Interaction has already been acknowledged.", 40060)
        sent.answered = True
        data = body.get("data") or {}
        self.callbacks.append(Callback(iid, token, kind, data))
        message = sent.payload.get("message")
        if kind == UPDATE and message is not None:
            await self.fake.edit_stored(message["id"], data)
        if query.get("with_response") not in ("1", "true"):
            return 204, None
        interaction = {"id": iid, "type": sent.payload["type"]}
        interaction["response_message_loading"] = kind == DEFERRED_MESSAGE
        interaction["response_message_ephemeral"] = bool(int(data.get("flags") or 0) & EPHEMERAL)
        return 200, {"interaction": interaction, "resource": {"type": kind}}

    async def _edit_original(self, body: Json, query: Any, app: str, token: str) -> Answer:
        sent = next((s for s in self._sent.values() if s.payload["token"] == token), None)
        if sent is None or sent.payload["application_id"] != app or not sent.answered:
            return _error(404, "Unknown Webhook", 10015)
        message = sent.payload.get("message")
        if message is None:
            return _error(404, "Unknown Message", 10008)
        return 200, dict(await self.fake.edit_stored(message["id"], body))


def _error(status: int, message: str, code: int) -> Answer:
    return status, {"message": message, "code": code}
