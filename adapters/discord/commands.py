"""The `/c2a` command as a Discord application command: its definition, its registration,
and the readings an interaction's handler needs to answer it with core.

`APPLICATION_COMMANDS` is what `register_commands` puts in place for an agent's application
with one bulk overwrite (`PUT /applications/{application}/commands`, discord.py's
`bulk_upsert_global_commands`): `/c2a` with a subcommand per command of `core.commands`, each
with its arguments as string options. An `INTERACTION_CREATE` of type 2 for it carries the
chosen subcommand and its options in `data`; `command_text` turns that back into the text core
parses, and `message_link` reads a Discord message link for `why`, so a handler answers with
one call::

    reply = await commands.answer(
        "discord", user_id, role_ids, command_text(interaction["data"]), locate=message_link
    )

and sends `reply` as an ephemeral interaction response (flags 64).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import discord

from core.commands import COMMAND

__all__ = ["APPLICATION_COMMANDS", "command_text", "message_link", "register_commands"]

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
