"""Questions with buttons on Discord (`core.actions.Ask`), and the presses that answer them.

An ask is a message with components: the question, then an action row with a button per choice
(`custom_id` the choice's `core.approvals.choice_id`; allowing choices primary, refusing ones
danger). It goes where a reply to the event asked about goes (`adapters.discord.places`),
answering it, with a nonce derived from its key, and pings nobody. Once decided it is edited to
the question and a line saying who decided what and when, with no buttons left.

A press arrives as a component interaction (`adapters.discord.interactions`). The presser's
groups are their roles: the role ids of the interaction's `member` (none in a DM), as the
guild discord.py keeps knows them. A press that decides is acknowledged with a deferred update
(the outbox redraws the message); anyone whose press does not decide gets an ephemeral refusal.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Final

import discord

from adapters.discord.failures import Retry, raise_as
from adapters.discord.interactions import Interactions, field
from adapters.discord.normalise import PLATFORM
from adapters.discord.places import Places, message_in, sent
from adapters.discord.render import (
    MESSAGE_LIMIT,
    RenderedMessage,
    RenderedPart,
    allowed_mentions,
    nonce_for,
    reply_message_id,
    units,
)
from core.actions import Ask
from core.approvals import (
    ASK_PREFIX,
    Approvals,
    Press,
    choice_id,
    parse_choice_id,
)

__all__ = ["Asks", "ask_content", "ask_view", "listen_for_presses", "press_of"]

_LABEL_CHARS: Final = 80  # Discord's limit for a button's label
_OUTCOME_ROOM: Final = 200  # what the question leaves for the line saying who decided


def ask_content(action: Ask) -> str:
    """The message's text: the question (cut to fit one message), and once decided the outcome
    on a line of its own."""
    question = _fit(action.text, MESSAGE_LIMIT - _OUTCOME_ROOM)
    return question if action.outcome is None else f"{question}\n{action.outcome}"


def ask_view(action: Ask) -> discord.ui.View | None:
    """The buttons of an undecided ask; None once decided (the message then has none). Needs a
    running event loop, as every discord.py view does."""
    if action.outcome is not None:
        return None
    view = discord.ui.View(timeout=None)
    for choice in action.choices:
        style = discord.ButtonStyle.primary if choice.allow else discord.ButtonStyle.danger
        label = choice.label[:_LABEL_CHARS]
        custom_id = choice_id(action.request, choice.id)
        view.add_item(discord.ui.Button(style=style, label=label, custom_id=custom_id))
    # The sender's clients only send: presses reach the live clients as interactions, so the
    # view is stopped before it is sent and discord.py never keeps it to wait for them.
    view.stop()
    return view


@dataclass(frozen=True, slots=True)
class Asks:
    """Posts and redraws the asks through `places` and `retrying` (the sender's)."""

    places: Places
    retrying: Retry

    async def ask(self, client: discord.Client, action: Ask) -> dict[str, Any]:
        """Post the ask, or edit it once decided; returns what identifies the message."""
        content = ask_content(action)
        none = discord.AllowedMentions.none()
        if action.message_id is not None:
            where = action.thread or action.conversation
            message = message_in(client, where, action.message_id)
            edit = functools.partial(
                message.edit, content=content, view=None, allowed_mentions=none
            )
            try:
                await self.retrying(edit)
            except Exception as exc:
                raise_as(exc, f"redrawing the question {message.id}", idempotent=True)
            return {"messageId": str(message.id)}
        nonce = nonce_for(action.key, 0)
        part = RenderedPart(content, nonce, allowed_mentions())
        rendered = RenderedMessage((part,), (), reply_message_id(action.in_reply_to))
        try:
            channel, reference = await self.places.destination(client, action.as_post(), rendered)
            send = functools.partial(
                channel.send,
                content,
                view=ask_view(action),
                nonce=nonce,
                allowed_mentions=none,
                mention_author=False,
                reference=reference,
            )
            posted = await self.retrying(send)
        except Exception as exc:
            raise_as(exc, f"asking {action.key}", idempotent=False)
        return sent(channel, {0: str(posted.id)})


def press_of(interaction: discord.Interaction) -> Press | None:
    """The press a component interaction is, or None when its `custom_id` is no ask's button.
    The presser's groups are their roles' ids (none outside a guild)."""
    parsed = parse_choice_id(field(interaction, "custom_id"))
    if parsed is None:
        return None
    user = interaction.user
    roles = user.roles if isinstance(user, discord.Member) else []
    return Press(
        request=parsed[0],
        choice=parsed[1],
        platform=PLATFORM,
        user=str(user.id),
        groups=tuple(str(role.id) for role in roles),
    )


def listen_for_presses(interactions: Interactions, approvals: Approvals) -> None:
    """Answer presses on the asks' buttons (see the module doc)."""

    async def pressed(interaction: discord.Interaction) -> None:
        refused = approvals.answer(press_of(interaction))
        if refused is None:
            await interaction.response.defer()
            return
        await interaction.response.send_message(refused, ephemeral=True)

    interactions.on_component(ASK_PREFIX, pressed)


def _fit(text: str, limit: int) -> str:
    """`text`, cut with an ellipsis when longer than `limit` UTF-16 code units."""
    if units(text) <= limit:
        return text
    kept: list[str] = []
    used = 0
    for character in text:
        used += units(character)
        if used > limit - 1:
            break
        kept.append(character)
    return "".join(kept) + "…"
