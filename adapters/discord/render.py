"""Turning an outbound action into what Discord is sent: pure, no I/O, no discord.py objects.

`render_send` makes a `Post` (or the new text of an `Edit`) into message parts of at most 2,000
characters, each with its `nonce` and the `allowed_mentions` it may ping with; `render_reaction`
makes a `React` into the glyph to add and the status signals it supersedes.

Mentions are the agent's choice, never the model text's: the recipients the action names
(`agent:<id>`, `role:<name>`, `user:<id>`) are written at the start of the first part, and that
part's allow list names exactly those users and roles. Every other part, and every mention
the text itself contains (`@everyone`, `@here`, `<@id>`, `<@&id>`), pings nobody: `parse` is
always empty and `replied_user` is false, so a reply pings its target only if the agent named
them.

Splitting prefers a line break, then a space, and never cuts inside a code point sequence
joined by ZWJ or a combining mark unless it is longer than a part. A code fence open at a cut is
closed at the end of the part and reopened, with its language, at the start of the next.
Lengths are counted in UTF-16 code units, which is never less than Discord's own count. The
text is the model's, so splitting takes time linear in it whatever it holds: a reply that
never finished splitting would stop the event loop, and the outbox would retry it after a
restart.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypedDict

from core.actions import Edit, Post, React
from core.errors import RenderError
from core.manifest import Workspace
from core.signals import GlyphMap, Signal, superseded_by

__all__ = [
    "MESSAGE_LIMIT",
    "AllowedMentionsPayload",
    "Mention",
    "RenderedMessage",
    "RenderedPart",
    "RenderedReaction",
    "allowed_mentions",
    "mention_prefix",
    "nonce_for",
    "render_reaction",
    "render_send",
    "reply_message_id",
    "resolve_mentions",
    "split_text",
    "units",
]

MESSAGE_LIMIT: Final = 2000
"""Discord's cap on a message's content."""

_FENCE: Final = "```"
_CLOSE: Final = "\n" + _FENCE
_MAX_LANGUAGE: Final = 32
_LANGUAGE: Final = re.compile(r"[A-Za-z0-9_+.#-]+")
_SNOWFLAKE: Final = re.compile(r"[0-9]{5,20}")
_MESSAGE_EVENT: Final = re.compile(r"discord:([0-9]{5,20})(?![0-9])")
_NONCE_PREFIX: Final = "c2a"
_NONCE_LENGTH: Final = 25  # Discord's maximum
_JOINERS: Final = frozenset({"\u200d", "\ufe0e", "\ufe0f"})
# The smallest part that holds a reopened fence with the longest language, its close and text.
_MIN_LIMIT: Final = len(_FENCE) + _MAX_LANGUAGE + 1 + len(_CLOSE) + 1


class AllowedMentionsPayload(TypedDict):
    """Discord's `allowed_mentions` object, as c2a always sends it."""

    parse: list[str]
    users: list[str]
    roles: list[str]
    replied_user: bool


@dataclass(frozen=True, slots=True)
class Mention:
    """One Discord mention the agent chose: a user (a person or an agent's bot) or a role."""

    kind: Literal["user", "role"]
    id: str

    @property
    def token(self) -> str:
        return f"<@{self.id}>" if self.kind == "user" else f"<@&{self.id}>"


@dataclass(frozen=True, slots=True)
class RenderedPart:
    """One message to post: its content, its nonce and what it may ping."""

    text: str
    nonce: str
    allowed_mentions: AllowedMentionsPayload


@dataclass(frozen=True, slots=True)
class RenderedMessage:
    """A "send" action as Discord messages, in posting order; only the first is the reply."""

    parts: tuple[RenderedPart, ...]
    mentions: tuple[Mention, ...]
    reply_to: str | None


@dataclass(frozen=True, slots=True)
class RenderedReaction:
    """A "react" action: the glyph to add and the signals whose reactions it replaces."""

    signal: Signal
    glyph: str
    superseded: frozenset[Signal]


def units(text: str) -> int:
    """The length of `text` in UTF-16 code units (an astral character counts two)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def resolve_mentions(recipients: Sequence[str], workspace: Workspace) -> tuple[Mention, ...]:
    """The Discord mentions for an action's `mentions`, in order, without repeats.

    `agent:<id>` is that agent's bot user, `role:<name>` the first Discord role bound to the
    manifest role, `user:<id>` a Discord user id. Raises `RenderError` naming the recipient
    that has no Discord form.
    """
    found: list[Mention] = []
    for recipient in recipients:
        mention = _resolve(recipient, workspace)
        if mention not in found:
            found.append(mention)
    return tuple(found)


def _resolve(recipient: str, workspace: Workspace) -> Mention:
    kind, _, name = recipient.partition(":")
    manifest = workspace.manifest
    if kind == "agent" and name in manifest.agents:
        user_id = workspace.user_id("discord", name)
        if user_id is None:
            raise RenderError(
                f"agent {name!r} has no Discord bot to mention (agents.{name}.discord)",
                details={"recipient": recipient},
            )
        return Mention("user", user_id)
    if kind == "role" and name in manifest.roles:
        bound = manifest.roles[name].groups("discord_roles")
        if not bound:
            raise RenderError(
                f"role {name!r} has no Discord role to mention (roles.{name}.discord_roles)",
                details={"recipient": recipient},
            )
        return Mention("role", bound[0])
    if kind == "user" and _SNOWFLAKE.fullmatch(name):
        return Mention("user", name)
    raise RenderError(
        f"cannot mention {recipient!r} on Discord: use agent:<id>, role:<name> or "
        "user:<Discord user id>",
        details={"recipient": recipient},
    )


def mention_prefix(mentions: Sequence[Mention], text: str) -> str:
    """What goes before the text: the mention tokens, then a space, or a line break when the
    text opens with a code fence (a fence only counts at the start of a line)."""
    if not mentions:
        return ""
    separator = "\n" if text.lstrip().startswith(_FENCE) else " "
    return " ".join(m.token for m in mentions) + separator


def allowed_mentions(
    mentions: Sequence[Mention] = (), *, replied_user: bool = False
) -> AllowedMentionsPayload:
    """An allow list naming exactly `mentions`: no @everyone/@here, no other user or role."""
    return {
        "parse": [],
        "users": [m.id for m in mentions if m.kind == "user"],
        "roles": [m.id for m in mentions if m.kind == "role"],
        "replied_user": replied_user,
    }


def nonce_for(idempotency_key: str, part: int) -> str:
    """The nonce of one part: derived from the action's key, so every attempt sends the same
    one and Discord (with `enforce_nonce`) returns the first message instead of a second.

    25 characters (Discord's maximum), starting with letters so it never reads as a number.
    """
    digest = hashlib.sha256(f"{idempotency_key}\x00{part}".encode()).hexdigest()
    return _NONCE_PREFIX + digest[: _NONCE_LENGTH - len(_NONCE_PREFIX)]


def reply_message_id(event_id: str | None) -> str | None:
    """The Discord message a post answers: the id inside the event id it answers
    (`discord:<id>`, also for an edit `discord:<id>~...`); None when it answers nothing or an
    event that is not a message (typing, a thread)."""
    match = _MESSAGE_EVENT.match(event_id or "")
    return match.group(1) if match else None


def render_send(action: Post | Edit, workspace: Workspace) -> RenderedMessage:
    """A post (or an edit's new text) as the Discord messages to send; only a post answers a
    message. Raises `RenderError` when it has no text, no idempotency key or a recipient
    without a Discord form."""
    text, key = action.text, action.key
    if not text.strip():
        raise RenderError("a Discord message needs text", details={"field": "text"})
    if not key:
        raise RenderError("the action has no idempotencyKey", details={"field": "idempotencyKey"})
    mentions = resolve_mentions(action.mentions, workspace)
    texts = split_text(text, prefix=mention_prefix(mentions, text))
    # The mentions are at the start of the first part, so only it may ping.
    parts = tuple(
        RenderedPart(part, nonce_for(key, index), allowed_mentions(() if index else mentions))
        for index, part in enumerate(texts)
    )
    reply_to = reply_message_id(action.in_reply_to) if isinstance(action, Post) else None
    return RenderedMessage(parts=parts, mentions=mentions, reply_to=reply_to)


def render_reaction(action: React, glyphs: GlyphMap) -> RenderedReaction:
    """A reaction as the workspace's Discord glyph for its signal; raises `RenderError` for a
    reaction that names no signal (a bot's reactions here are signals)."""
    signal = action.signal
    if signal is None:
        known = ", ".join(s.value for s in Signal)
        raise RenderError(
            f"a reaction names no signal; the signals are {known}", details={"field": "signal"}
        )
    return RenderedReaction(signal, glyphs.native("discord", signal), superseded_by(signal))


# -- splitting ---------------------------------------------------------------------------------


def split_text(text: str, *, limit: int = MESSAGE_LIMIT, prefix: str = "") -> tuple[str, ...]:
    """`prefix + text` cut into parts of at most `limit` UTF-16 units, whitespace-trimmed as
    Discord trims them, with code fences closed and reopened across cuts.

    Runs in time linear in the text, whatever it holds: blanks before a part's first
    non-blank character are dropped when what follows does not fit after them, and a character
    sequence longer than a part is cut where the part ends.
    Raises `RenderError` if the prefix leaves no room for text.
    """
    if units(prefix) + len(_CLOSE) + 1 > limit:
        raise RenderError("the mentions leave no room for the message", details={"limit": limit})
    if limit < _MIN_LIMIT:
        raise RenderError(f"a part limit under {_MIN_LIMIT} cannot hold a reopened code fence")
    parts: list[str] = []
    opening = prefix  # how the part being filled starts: the prefix, or the fence it reopens
    fence: str | None = None  # the opening line of the fence open at the end of `buffer`
    buffer, used, has_body = prefix, units(prefix), False
    for line in _lines(text.replace("\r\n", "\n")):
        start = 0  # `line[start:]` is still to place
        while start < len(line):
            room = limit - used
            if len(line) - start <= room:  # else it cannot fit: a unit per character at least
                piece = line[start:]
                size, after = units(piece), _fence_after(piece, fence)
                if size + (len(_CLOSE) if after is not None else 0) <= room:
                    buffer += piece
                    used += size
                    fence, has_body = after, has_body or bool(piece.strip())
                    break
            if has_body:
                parts.append(_closed(buffer, fence))
                opening = _reopened(fence)
                buffer, used, has_body = opening, units(opening), False
                continue
            if buffer != opening:
                # Only blanks since the part's opening, and what follows does not fit after
                # them: drop them (they would be trimmed from a part of their own).
                buffer, used = opening, units(opening)
                continue
            # Not even an empty part holds the rest: cut it, keeping room to close a fence.
            end = _cut(line, start, room - len(_CLOSE))
            head = line[start:end]
            buffer += head
            used += units(head)
            fence, has_body, start = _fence_after(head, fence), bool(head.strip()), end
    if has_body:
        parts.append(buffer.strip())
    return tuple(parts)


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _fence_after(piece: str, fence: str | None) -> str | None:
    """The fence open after `piece`, given the one open before it (an odd count toggles)."""
    if piece.count(_FENCE) % 2 == 0:
        return fence
    if fence is not None:
        return None
    stripped = piece.strip()
    language = stripped[len(_FENCE) :].split(maxsplit=1) if stripped.startswith(_FENCE) else []
    if language and len(language[0]) <= _MAX_LANGUAGE and _LANGUAGE.fullmatch(language[0]):
        return _FENCE + language[0]
    return _FENCE


def _closed(buffer: str, fence: str | None) -> str:
    text = buffer.strip()
    return text + _CLOSE if fence is not None else text


def _reopened(fence: str | None) -> str:
    return fence + "\n" if fence is not None else ""


def _cut(line: str, start: int, room: int) -> int:
    """Where to cut `line[start:]` so the head fits `room` units (at least one character):
    after the last space in the second half of what fits, else at the last boundary that
    breaks no character sequence, else (a sequence longer than the room) where the room ends."""
    end, used = start, 0
    while end < len(line):
        size = 2 if ord(line[end]) > 0xFFFF else 1
        if used + size > room:
            break
        used += size
        end += 1
    end = max(end, start + 1)  # a part always takes something, or the split would never end
    space = line.rfind(" ", start, end)
    if space > start and space - start >= (end - start) // 2:
        return space + 1
    cut = end
    while start < cut < len(line) and _joined(line, cut):
        cut -= 1
    return cut if cut > start else end


def _joined(text: str, index: int) -> bool:
    """Whether a cut before `text[index]` would break a character sequence in two."""
    return (
        text[index] in _JOINERS
        or text[index - 1] == "\u200d"
        or unicodedata.combining(text[index]) != 0
        or 0x1F3FB <= ord(text[index]) <= 0x1F3FF  # skin tone modifiers
    )
