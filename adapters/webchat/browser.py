"""What a browser asks of the web chat over its websocket, checked as a platform's payload would
be: `post` (or `/c2a`, answered to that person alone), `typing`, `edit`, `delete`, `react`,
`unreact`. Each request is done through the `WebChat`'s own calls (`say`, `change`,
`typing`); what only the asking browser is shown comes back as one frame: what is wrong with
the request (`error`), or the answer to a `/c2a` command (`notice`), which is neither recorded
nor handed to the host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from adapters.webchat.normalise import PLATFORM, dm_channel
from adapters.webchat.request import BrowserRequest
from core.command_answers import Locate
from core.commands import after_command

if TYPE_CHECKING:
    from adapters.webchat.server import WebChat

__all__ = ["BINARY_REFUSED", "answer_browser"]

_OPS = ("post", "typing", "edit", "delete", "react", "unreact")


async def answer_browser(chat: WebChat, raw: str, speakers: set[str]) -> dict[str, Any] | None:
    """Do what one browser request asks; returns the frame for that browser alone, if any.
    `speakers` are the people the page has spoken as: each request adds its own."""
    try:
        request = BrowserRequest(raw)
        op = request.text("op")
        if op not in _OPS:
            return _error(f"unknown op {op!r}: one of {', '.join(_OPS)}")
        user = request.text("as")
        if user not in chat.config.humans:
            people = ", ".join(chat.config.humans)
            return _error(f"{user!r} is not one of the people here ({people})")
        speakers.add(user)
        if op in ("post", "typing"):
            channel = request.text("channel")
            if not _may_post(chat, user, channel):
                return _error(f"{user} cannot post in {channel!r}")
            thread = chat.history.thread_in(channel, request.optional("thread"))
            if op == "typing":
                await chat.typing(user, channel, thread, True)
                return None
            text = request.said()
            command = after_command(text)
            if command is not None and chat.commands is not None:
                locate = _located(chat)
                answer = await chat.commands.answer(PLATFORM, user, (), command, locate=locate)
                return {"op": "notice", "text": answer}
            await chat.say(user, channel, text, thread=thread)
        elif op in ("edit", "delete"):
            message_id = request.text("id")
            message = chat.history.messages.get(message_id)
            if message is None:
                return _error(f"no message {message_id!r} to {op}")
            if message.user != user:
                return _error(f"only the author of message {message_id} can {op} it")
            fields = {"text": request.said()} if op == "edit" else {}
            await chat.change(op, user, message_id, **fields)
        else:  # react, unreact
            kind = "reaction_added" if op == "react" else "reaction_removed"
            await chat.change(kind, user, request.text("id"), emoji=request.emoji())
    except (ValueError, LookupError) as exc:
        return _error(str(exc))
    return None


def _error(problem: str) -> dict[str, Any]:
    return {"op": "error", "text": problem}


BINARY_REFUSED: Final = _error("a request is a JSON text frame, not a binary one")


def _may_post(chat: WebChat, user: str, channel: str) -> bool:
    """One of the channels, or the person's own DM with an agent."""
    if channel in chat.config.channels:
        return True
    return any(channel == dm_channel(user, agent) for agent in chat.agents)


def _located(chat: WebChat) -> Locate:
    """How `/c2a why` finds a message named by its id in the page (`12`, or `#12`)."""

    def locate(link: str) -> tuple[str, str] | None:
        message = chat.history.messages.get(link.removeprefix("#"))
        return (message.channel, message.id) if message is not None else None

    return locate
