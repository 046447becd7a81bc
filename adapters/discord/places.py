"""Where a Discord post goes, and which of its parts an earlier attempt already posted.

A post goes to its thread or conversation, replying (`message_reference`) to the message
answered; visibility `dm` (and `ephemeral`, which a bot cannot post outside an interaction)
goes to a DM with the person the host named (`Post.person`), unless the conversation is that
DM. A `thread` naming a message that no thread was started from is a reply to that
message in the conversation. An earlier attempt is looked for in the channel's history (after
the message answered, else the latest messages): this bot's messages holding the rendered
parts in order, a message whose `nonce` Discord returned by that nonce, any other by its
content (history does not return nonces).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import discord

from adapters.discord.failures import Retry
from adapters.discord.render import RenderedMessage, RenderedPart
from core.actions import Post
from core.errors import PermanentSendError, TransientSendError

__all__ = ["Messageable", "Places", "channel_id", "message_in", "own_id", "sent"]

Messageable = discord.PartialMessageable | discord.DMChannel

_PRIVATE: Final = frozenset({"dm", "ephemeral"})
_Kind = Literal["dm", "channel", "none"]


class Places:
    """Finds where posts go and what of them is there, through `retrying`; `history_limit`
    bounds how many messages a look reads. Remembers which channels are DMs (a channel's type
    never changes)."""

    def __init__(self, retrying: Retry, history_limit: int) -> None:
        self._retrying = retrying
        self._history_limit = history_limit
        self._kind: dict[int, _Kind] = {}  # channel id -> its kind (a channel's never changes)

    async def destination(
        self, client: discord.Client, action: Post, rendered: RenderedMessage
    ) -> tuple[Messageable, discord.MessageReference | None]:
        """The channel to post in and the reference of the first part."""
        where, under = await self._channel(client, action)
        channel = client.get_partial_messageable(where)
        if action.visibility in _PRIVATE and await self._kind_of(client, where) != "dm":
            person = action.person
            if person is None or not person.isdecimal():
                raise PermanentSendError(
                    "a Discord DM needs the Discord user it is for",
                    {"visibility": action.visibility, "person": person},
                )
            user = discord.Object(int(person))
            return await self._retrying(lambda: client.create_dm(user)), None
        reply_to = rendered.reply_to or under
        if reply_to is None:
            return channel, None
        reference = discord.MessageReference(
            message_id=int(reply_to), channel_id=where, fail_if_not_exists=False
        )
        return channel, reference

    async def _channel(self, client: discord.Client, action: Post) -> tuple[int, str | None]:
        """The channel a post goes to, and the message it hangs under: a `thread` is a channel
        of its own, but one naming a message no thread was started from (Discord starts one
        only when asked) is a reply to that message in the conversation."""
        if action.thread is None or action.thread == action.conversation:
            return channel_id(action.conversation), None
        thread = channel_id(action.thread)
        if await self._kind_of(client, thread) == "none":
            return channel_id(action.conversation), action.thread
        return thread, None

    async def _kind_of(self, client: discord.Client, channel_id: int) -> _Kind:
        if channel_id not in self._kind:
            try:
                channel = await self._retrying(lambda: client.fetch_channel(channel_id))
            except discord.NotFound:
                self._kind[channel_id] = "none"
            else:
                is_dm = isinstance(channel, discord.DMChannel)
                self._kind[channel_id] = "dm" if is_dm else "channel"
        return self._kind[channel_id]

    async def posted(
        self, client: discord.Client, channel: Messageable, rendered: RenderedMessage
    ) -> dict[int, str]:
        """The parts this bot already posted: matched in order, from after the message
        answered (oldest first) or among the latest `history_limit` messages."""
        me = own_id(client)
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


def channel_id(value: object) -> int:
    if isinstance(value, str) and value.isdecimal():
        return int(value)
    raise PermanentSendError(f"not a Discord channel or message id: {value!r}", {"id": value})


def message_in(client: discord.Client, where: str, message_id: str) -> discord.PartialMessage:
    """The message `message_id` in channel (or thread) `where`, for `client` to act on, read
    from nothing; PermanentSendError when either is not a Discord id."""
    return client.get_partial_messageable(channel_id(where)).get_partial_message(
        channel_id(message_id)
    )


def own_id(client: discord.Client) -> int:
    if client.user is None:
        raise TransientSendError("the Discord client is not logged in")
    return client.user.id


def _is(message: discord.Message, part: RenderedPart) -> bool:
    """Whether `message` is `part`: by nonce where Discord returned one, else by content."""
    if message.nonce is not None:
        return str(message.nonce) == part.nonce
    return message.content.strip() == part.text.strip()


def sent(channel: Messageable, landed: Mapping[int, str]) -> dict[str, Any]:
    ids = [landed[index] for index in sorted(landed)]
    return {"messageId": ids[0], "messageIds": ids, "channelId": str(channel.id)}
