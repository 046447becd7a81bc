"""The `/c2a` slash command on Slack, answered to the person who ran it alone.

Slack sends a slash command to the app it belongs to: over Socket Mode a `slash_commands`
envelope, over HTTP a signed form-encoded POST to the app's request URL (the same
`/slack/events/<agent>` as its events, checked by `adapters.slack.signed_request`). Either way
slack-bolt's `command` listener (`listen_for_commands`) acknowledges it at once, asks core
(`core.command_answers.Commands`) for the answer, and sends it ephemerally through the
command's `response_url` (bolt's `respond`). For `mute`, `unmute` and `leave`, the person's
user groups are looked up (usergroups.users.list) only for the `group:` approvers of the agent
named, as for a press on a question's button. A message link (`why`) is read by
`message_link`. What the person may read is the conversations they are a member of
(`conversations.members`, through a `SlackDirectory` that asks again after `READERS_TTL`, a
minute, in `adapters.slack.plugin`), so neither `why` nor `status` nor `claims` shows them the
words of a private channel they are not in.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.asks import groups_of
from adapters.slack.normalise import PLATFORM
from core.command_answers import Commands
from core.commands import COMMAND

__all__ = ["listen_for_commands", "message_link"]

# https://<team>.slack.com/archives/<channel>/p<ts without its dot>[?thread_ts=...]
_LINK = re.compile(r"/archives/([A-Z0-9]+)/p(\d{10})(\d{6})(?:$|[?#])")


def message_link(link: str) -> tuple[str, str] | None:
    """`(channel, ts)` of a Slack message link; None for anything else."""
    found = _LINK.search(link)
    return (found[1], f"{found[2]}.{found[3]}") if found else None


def listen_for_commands(
    app: AsyncApp, commands: Commands, *, members: Callable[[str], Awaitable[frozenset[str]]]
) -> None:
    """Answer `/c2a` in `app` (see the module doc); `members` gives a conversation's members."""

    async def command(ack: Any, body: dict[str, Any], respond: Any, client: AsyncWebClient) -> None:
        await ack()
        user, text = str(body["user_id"]), str(body.get("text") or "")
        approvers = commands.approvers_of(text)
        groups = await groups_of(client, user, approvers) if approvers else ()

        async def may_read(channel: str) -> bool:
            return user in await members(channel)

        reply = await commands.answer(
            PLATFORM, user, groups, text, locate=message_link, may_read=may_read
        )
        await respond(text=reply, response_type="ephemeral")

    app.command(COMMAND)(command)
