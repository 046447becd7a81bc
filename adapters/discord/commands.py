"""The `/c2a` command as a Discord application command: its definition, its registration,
and its answer.

`APPLICATION_COMMANDS` is what `register_commands` puts in place for an agent's application
with one bulk overwrite (`PUT /applications/{application}/commands`, discord.py's
`bulk_upsert_global_commands`): `/c2a` with a subcommand per command of `core.commands`, each
with its arguments as string options.

Someone running it reaches the bot whose application it is as an `INTERACTION_CREATE` of type
2 (`adapters.discord.interactions`), with the chosen subcommand and its options in `data`.
`listen_for_commands` answers it: `command_text` turns `data` back into the text core parses,
the person's groups are their roles (the role ids of the interaction's `member`; none in a DM,
as for a press on a question's button), `message_link` reads a Discord message link for `why`,
`may_read` says whether the person can view a channel (their permissions in it, from the
guild's cached roles and the channel's overwrites; no when the client does not know the
channel or the person), and core (`core.command_answers.Commands`) gives the answer, which only
that person sees: an ephemeral message (callback type 4, flags 64), pinging nobody, cut to fit
one message.

Discord takes an interaction's response only within three seconds, and every answer reads or
writes the ledger (each is audited; `why` and `status` read deliveries and queues, `mute` and
`leave` write). An answer ready within `IN_TIME` is the response itself; a slower one is
deferred first (type 5, ephemeral: the person sees that the bot is thinking) and then written
into the deferred response (`PATCH .../messages/@original`, with the interaction's token).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Final

import discord

from adapters.discord.interactions import Interactions
from adapters.discord.normalise import PLATFORM
from adapters.discord.render import MESSAGE_LIMIT, split_text
from core.command_answers import Commands, MayRead
from core.commands import COMMAND

__all__ = [
    "APPLICATION_COMMANDS",
    "IN_TIME",
    "command_text",
    "listen_for_commands",
    "may_read",
    "message_link",
    "one_message",
    "register_commands",
]

IN_TIME: Final = 2.0
"""Seconds an answer may take and still be the response itself; Discord's limit is three,
from when it sent the interaction, so one is left for the gateway and the response's trip."""

_SUBCOMMAND, _STRING, _CHAT_INPUT = 1, 3, 1  # Discord's option and command types


def _string(name: str, description: str, *, required: bool = True) -> dict[str, Any]:
    return {"type": _STRING, "name": name, "description": description, "required": required}


_AGENT = _string("agent", "the agent's id, as in the manifest")
_SUBCOMMANDS: Final[Sequence[tuple[str, str, Sequence[dict[str, Any]]]]] = (
    ("status", "Agents, what each is working on, queue depth", ()),
    (
        "why",
        "The decision and reason each agent got for a message",
        (_string("link", "a message link"),),
    ),
    (
        "mute",
        "No new turns for the agent until then (approvers only)",
        (_AGENT, _string("duration", "30m, 2h, 1d; none: until unmuted", required=False)),
    ),
    ("unmute", "Turns again for the agent (approvers only)", (_AGENT,)),
    ("leave", "Stop the agent's current turn (approvers only)", (_AGENT,)),
    ("claims", "Who holds which message, and until when", ()),
    ("help", "What the commands are", ()),
)

APPLICATION_COMMANDS: Final[list[dict[str, Any]]] = [
    {
        "type": _CHAT_INPUT,
        "name": COMMAND.removeprefix("/"),
        "description": "What the agents are doing and why; mute or stop one",
        "options": [
            {"type": _SUBCOMMAND, "name": name, "description": text, "options": list(options)}
            for name, text, options in _SUBCOMMANDS
        ],
    }
]
"""The application commands of every agent's Discord application: `/c2a` alone."""

# https://discord.com/channels/<guild or @me>/<channel>/<message>
_LINK = re.compile(r"/channels/(?:\d+|@me)/(\d+)/(\d+)(?:$|[?#/])")


def message_link(link: str) -> tuple[str, str] | None:
    """`(channel, message id)` of a Discord message link; None for anything else."""
    found = _LINK.search(link)
    return (found[1], found[2]) if found else None


def command_text(data: Mapping[str, Any]) -> str:
    """The text after `/c2a` that an application command interaction's `data` stands for:
    its subcommand, then its options' values in the order the definition lists them."""
    chosen = next(iter(data.get("options") or []), None)
    if chosen is None:
        return ""
    given = {str(o.get("name")): str(o.get("value", "")) for o in chosen.get("options") or []}
    order = next((opts for name, _, opts in _SUBCOMMANDS if name == chosen.get("name")), ())
    values = [given[o["name"]] for o in order if given.get(o["name"])]
    return " ".join([str(chosen.get("name", "")), *values])


async def register_commands(application_id: str, token: str) -> list[str]:
    """Put `/c2a` in place for the application (one bulk overwrite, as the bot); returns the
    names Discord now lists. Raises discord.py's `HTTPException` when Discord refuses."""
    http = discord.http.HTTPClient(asyncio.get_running_loop())
    try:
        await http.static_login(token)
        listed = await http.bulk_upsert_global_commands(application_id, APPLICATION_COMMANDS)
    finally:
        await http.close()
    return [str(command["name"]) for command in listed]


def listen_for_commands(
    interactions: Interactions, commands: Commands, *, in_time: float = IN_TIME
) -> None:
    """Answer `/c2a` from any of the workspace's bots (see the module doc)."""

    async def command(interaction: discord.Interaction) -> None:
        user = interaction.user
        roles = user.roles if isinstance(user, discord.Member) else []
        groups = tuple(str(role.id) for role in roles)
        text = command_text(interaction.data or {})
        reply = commands.answer(
            PLATFORM,
            str(user.id),
            groups,
            text,
            locate=message_link,
            may_read=may_read(interaction),
        )
        await _respond(interaction, reply, in_time)

    interactions.on_command(COMMAND.removeprefix("/"), command)


def may_read(interaction: discord.Interaction) -> MayRead:
    """Whether the person who sent `interaction` can view a channel or thread of a guild the
    client knows (from wherever they ran the command: a DM too, when the guild knows them)."""

    async def can_view(channel_id: str) -> bool:
        place = interaction.client.get_channel(int(channel_id)) if channel_id.isdigit() else None
        if not isinstance(place, discord.abc.GuildChannel | discord.Thread):
            return False
        person = interaction.user
        known = isinstance(person, discord.Member) and person.guild.id == place.guild.id
        member = person if known else place.guild.get_member(person.id)
        return isinstance(member, discord.Member) and place.permissions_for(member).view_channel

    return can_view


async def _respond(interaction: discord.Interaction, reply: Awaitable[str], in_time: float) -> None:
    """Send `reply` to the person alone: as the response when it is ready within `in_time`
    seconds, otherwise into a deferred response."""
    answer = asyncio.ensure_future(reply)
    done, _ = await asyncio.wait({answer}, timeout=in_time)
    none = discord.AllowedMentions.none()
    if done:
        content = one_message(answer.result())
        await interaction.response.send_message(content, ephemeral=True, allowed_mentions=none)
        return
    await interaction.response.defer(ephemeral=True, thinking=True)
    content = one_message(await answer)
    await interaction.edit_original_response(content=content, allowed_mentions=none)


def one_message(text: str) -> str:
    """`text` as one Discord message: its first part, marked as cut when there is more."""
    first, *rest = split_text(text, limit=MESSAGE_LIMIT - 1) or ("",)
    return f"{first}…" if rest else first
