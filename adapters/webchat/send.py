"""The web chat's side of the outbox: agents' messages, reactions, edits, deletes and typing.

It implements `core.outbox.Sender` on a running `WebChat`. Sending is idempotent by the
action's key: a retried post finds the message it already posted (`find`, and the post itself
checks first), so the page never shows one answer twice. Mentions are only those the agent
chose (`agent:<id>`, `role:<name>`, `user:<name>`), never names its text happens to contain.
A reply stays where the message it answers is (its thread, if any) and points at it; a post
into a thread names any message of it, which must be in its conversation, as a person's post
must. A post marked `dm` from a channel goes to the DM of its `user:` recipient or of the
person it answers, as on Slack and Discord. A status
signal replaces the agent's earlier status reaction on the same message, as on Slack. The
working indicator is typing. A post's files are shown in the message, each a block the page
folds away (`adapters.webchat.file_blocks`).

An edit marked `draft` is a reply being streamed as the model writes it: it is shown on the page
only, never recorded or handed to the host, so the ledger keeps only the message as posted and
its final edit. A draft, like any edit, changes only a message that exists; it never posts one.
The final edit is recorded, but not shown as an edit (`adapters.webchat.history`).

An `ephemeral` post (a turn budget's notice) is shown only on the pages of the person whose
message it answers, as a `/c2a` answer is, and kept nowhere.
"""

from __future__ import annotations

from typing import Any

from adapters.webchat.file_blocks import with_files
from adapters.webchat.history import Message
from adapters.webchat.normalise import dm_channel, is_dm
from adapters.webchat.server import WebChat
from core.actions import Action, Ask, Delete, Edit, Post, React, Unreact, Working
from core.errors import PermanentSendError
from core.signals import GlyphMap, superseded_by

__all__ = ["WebchatSender"]


class WebchatSender:
    """Performs outbox actions whose platform is `webchat`."""

    def __init__(self, chat: WebChat, glyphs: GlyphMap):
        """`glyphs`: the workspace's (`Workspace.glyphs`)."""
        self.chat = chat
        self.glyphs = glyphs

    async def send(self, action: Action) -> dict[str, Any]:
        if action.agent not in self.chat.agents:
            raise PermanentSendError(f"webchat: {action.agent!r} is not an agent here")
        match action:
            case Post() if action.visibility == "ephemeral":
                return await self._tell(action)
            case Post():
                return await self._post(action)
            case Edit() | Delete():
                return await self._change(action)
            case React():
                return await self._react(action)
            case Unreact():
                return await self._unreact(action)
            case Working():  # the working indicator is typing here
                await self.chat.typing(action.agent, action.conversation, action.thread, action.on)
                return {}
            case Ask():
                return await self._ask(action)

    async def find(self, action: Action) -> dict[str, Any] | None:
        """The message an earlier attempt of a post (or an ask) posted, or None."""
        if not isinstance(action, Post | Ask) or (isinstance(action, Ask) and action.message_id):
            return None
        message_id = self.chat.history.by_key.get(action.key)
        return None if message_id is None else {"messageId": message_id}

    async def _ask(self, action: Ask) -> dict[str, Any]:
        """A question with buttons: posted, then its buttons shown; once decided, edited to
        say so, and its buttons cleared."""
        if action.message_id is None:
            posted = await self._post(action)
        else:
            posted = {"messageId": self._message_id(action.message_id)}
            text = f"{action.text}\n{action.outcome}"
            await self.chat.change("edit", action.agent, posted["messageId"], text=text)
        await self.chat.show_ask(posted["messageId"], action)
        return posted

    async def _post(self, action: Post | Ask) -> dict[str, Any]:
        earlier = await self.find(action)
        if earlier is not None:
            return earlier
        conversation, thread = action.conversation, action.thread
        answered = self._answered(action.in_reply_to)
        if isinstance(action, Post) and action.visibility == "dm" and not is_dm(conversation):
            conversation, thread = self._dm_with(action), None
            answered = None  # the message answered is elsewhere, in a channel
        elif answered is not None and thread is None:
            thread = answered.thread
        try:  # a thread that is not there would hide the post: refused, as a person's is
            thread = self.chat.history.thread_in(conversation, thread)
        except LookupError as missing:
            raise PermanentSendError(f"webchat: {missing}") from None
        users: list[str] = []
        roles: list[str] = []
        for recipient in action.mentions if isinstance(action, Post) else ():
            kind, _, name = recipient.partition(":")
            (roles if kind == "role" else users).append(name)
        text = with_files(action.text, action.files) if isinstance(action, Post) else action.text
        message = await self.chat.say(
            action.agent,
            conversation,
            text,
            thread=thread,
            reply_to=answered.id if answered is not None else None,
            key=action.key,
            mentions={"users": users, "roles": roles, "broadcast": []},
        )
        return {"messageId": message.id}

    def _dm_with(self, action: Post) -> str:
        """The DM a `dm` post from a channel goes to, as on Slack and Discord: with the person
        the host named; never posted where it was asked, since the agent chose to say it
        privately."""
        return dm_channel(self._person(action), action.agent)

    async def _tell(self, action: Post) -> dict[str, Any]:
        """An ephemeral post: shown only to the person the host named, on their open pages
        (`WebChat.tell`), and kept nowhere, as Slack's ephemeral messages are."""
        return {"pages": await self.chat.tell(self._person(action), action.text)}

    def _person(self, action: Post) -> str:
        """Whom a private post is for (`Post.person`): one of the people here."""
        if action.person not in self.chat.config.humans:
            raise PermanentSendError(
                f"webchat: a {action.visibility} post goes to one of the people here, not to "
                f"{action.person!r}"
            )
        return action.person

    async def _react(self, action: React) -> dict[str, Any]:
        if action.signal is None:
            raise PermanentSendError("webchat: a reaction here is a signal; none given")
        agent, signal = action.agent, action.signal
        glyph = self.glyphs.native("webchat", signal)
        if self._gone(action.message_id):  # deleted before the signal went: nothing to mark
            return {"messageId": action.message_id, "emoji": glyph, "gone": True}
        message_id = self._message_id(action.message_id)
        message = self.chat.history.messages[message_id]
        for older in superseded_by(signal):
            old = self.glyphs.native("webchat", older)
            if agent in message.reactions.get(old, []):
                await self.chat.change("reaction_removed", agent, message_id, emoji=old)
        if agent not in message.reactions.get(glyph, []):
            await self.chat.change("reaction_added", agent, message_id, emoji=glyph)
        return {"messageId": message_id, "emoji": glyph}

    async def _unreact(self, action: Unreact) -> dict[str, Any]:
        glyph = self.glyphs.native("webchat", action.signal)
        if self._gone(action.message_id):  # deleted: its reactions went with it
            return {"messageId": action.message_id, "removed": [], "gone": True}
        message_id = self._message_id(action.message_id)
        message = self.chat.history.messages[message_id]
        if action.agent in message.reactions.get(glyph, []):
            await self.chat.change("reaction_removed", action.agent, message_id, emoji=glyph)
        return {"messageId": message_id, "removed": [glyph]}

    async def _change(self, action: Edit | Delete) -> dict[str, Any]:
        if isinstance(action, Delete) and self._gone(action.message_id):
            return {"messageId": action.message_id}  # deleted already: nothing to do again
        message_id = self._message_id(action.message_id)
        if self.chat.history.messages[message_id].user != action.agent:
            raise PermanentSendError(
                f"webchat: {action.agent} can only {action.kind} its own messages"
            )
        if isinstance(action, Delete):
            await self.chat.change("delete", action.agent, message_id)
        elif action.draft:
            return await self._draft(message_id, action.text)
        else:
            await self.chat.change("edit", action.agent, message_id, text=action.text)
        return {"messageId": message_id}

    async def _draft(self, message_id: str, text: str) -> dict[str, Any]:
        """Redraw a message being written, on the page only (nothing recorded)."""
        await self.chat.show_draft(self.chat.history.messages[message_id], text)
        return {"messageId": message_id}

    def _gone(self, message_id: str) -> bool:
        """Whether the message is this chat's and was deleted."""
        message = self.chat.history.messages.get(message_id)
        return message is not None and message.deleted

    def _message_id(self, message_id: str) -> str:
        """A message of this chat that is not deleted (`PermanentSendError` otherwise)."""
        message = self.chat.history.messages.get(message_id)
        if message is None:
            raise PermanentSendError(f"webchat: no message {message_id}")
        if message.deleted:
            raise PermanentSendError(f"webchat: message {message_id} was deleted")
        return message_id

    def _answered(self, event: str | None) -> Message | None:
        """The message an `inReplyTo` event id names, if it is one of this chat's."""
        prefix = f"webchat:{self.chat.workspace}:"
        if event is None or not event.startswith(prefix):
            return None
        message_id = event.removeprefix(prefix).split("~", 1)[0].split("+", 1)[0]
        return self.chat.history.messages.get(message_id)
