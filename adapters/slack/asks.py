"""Questions with buttons on Slack (`core.actions.Ask`), and the presses that answer them.

An ask is a chat.postMessage with Block Kit: a section with the question and an `actions`
block with a button per choice (`action_id` the choice's `core.approvals.choice_id`, allowing
choices `primary`, refusing ones `danger`). Once decided it is redrawn with chat.update: the
question and a context line saying who decided what and when, with no buttons left.

A press arrives as an interactive `block_actions` payload, taken by slack-bolt's `action`
listener (`listen_for_presses`), acknowledged at once, and handed to `core.approvals`. The
presser's user groups are looked up (usergroups.users.list) only for the `group:` approvers
of the agent asked for. Anyone who may not decide gets an ephemeral refusal
(chat.postEphemeral); the decided message itself is redrawn by the outbox.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.normalise import PLATFORM
from adapters.slack.posts import Replied
from adapters.slack.render import place, plain
from adapters.slack.webapi import WebApi
from core.actions import Ask
from core.approvals import (
    ASK_PREFIX,
    GROUP_PREFIX,
    Approvals,
    Press,
    choice_id,
    parse_choice_id,
)

__all__ = ["Asks", "ask_blocks", "groups_of", "listen_for_presses"]

log = logging.getLogger(__name__)

_LABEL_CHARS = 75  # Slack's limit for a button's text
_PRESSES = re.compile(f"^{re.escape(ASK_PREFIX)}")  # the action ids of the asks' buttons


def ask_blocks(action: Ask) -> list[dict[str, Any]]:
    """The Block Kit of an ask: its question, then its buttons or, once decided, the outcome."""
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "plain_text", "text": action.text}}
    ]
    if action.outcome is not None:
        outcome = {"type": "plain_text", "text": action.outcome}
        return [*blocks, {"type": "context", "elements": [outcome]}]
    buttons = [
        {
            "type": "button",
            "text": {"type": "plain_text", "text": choice.label[:_LABEL_CHARS]},
            "action_id": choice_id(action.request, choice.id),
            "value": choice.id,
            "style": "primary" if choice.allow else "danger",
        }
        for choice in action.choices
    ]
    return [*blocks, {"type": "actions", "elements": buttons}]


@dataclass(frozen=True, slots=True)
class Asks:
    """Posts and redraws the asks through `api`, placed as replies are (`replied`)."""

    api: WebApi
    replied: Replied

    async def ask(self, action: Ask) -> dict[str, Any]:
        blocks = ask_blocks(action)
        # The message's own text is mrkdwn (what notifications show): the agent's words in it
        # are escaped like any post's, so `<!channel>` in a tool's title pings nobody.
        words = action.text if action.outcome is None else f"{action.text}\n{action.outcome}"
        text = plain(words)
        if action.message_id is not None:
            channel = action.conversation.partition("/")[0]
            params = {"channel": channel, "ts": action.message_id, "text": text, "blocks": blocks}
            await self.api.call(action.agent, "chat.update", params)
            return {"messageId": action.message_id, "conversation": channel}
        as_reply = action.as_post()
        replied = await self.replied.event(as_reply)
        in_thread = self.replied.in_thread(action.conversation)
        where = place(as_reply, replied, reply_in_thread=in_thread)
        params = {"channel": where.channel, "text": text, "blocks": blocks}
        if where.thread_ts:
            params["thread_ts"] = where.thread_ts
        posted = await self.api.call(action.agent, "chat.postMessage", params)
        return {"messageId": str(posted["ts"]), "conversation": where.channel}


def listen_for_presses(app: AsyncApp, approvals: Approvals) -> None:
    """Answer presses on the asks' buttons in `app` (see the module doc)."""

    async def pressed(ack: Any, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        parsed = parse_choice_id(str(body["actions"][0].get("action_id", "")))
        user, channel = body["user"]["id"], body["channel"]["id"]
        if parsed is None:
            return
        request, choice = parsed
        agent = approvals.agent_of(request)
        groups = await groups_of(client, user, approvals.approvers.get(agent or "", ()))
        press = Press(request=request, choice=choice, platform=PLATFORM, user=user, groups=groups)
        refused = approvals.answer(press)
        if refused is not None:
            thread = (body.get("message") or {}).get("thread_ts")
            params = {"channel": channel, "user": user, "text": refused}
            await client.chat_postEphemeral(**params, thread_ts=thread)

    app.action(_PRESSES)(pressed)


async def groups_of(
    client: AsyncWebClient, user: str, approvers: tuple[str, ...]
) -> tuple[str, ...]:
    """Those of the approvers' user groups that `user` is in (a group Slack will not list
    counts as one they are not in)."""
    groups = [a.removeprefix(GROUP_PREFIX) for a in approvers if a.startswith(GROUP_PREFIX)]
    found = []
    for group in groups:
        try:
            answer = await client.usergroups_users_list(usergroup=group)
        except SlackApiError as exc:
            log.warning("slack: user group %s not listed: %s", group, exc.response.get("error"))
            continue
        if user in (answer.get("users") or []):
            found.append(group)
    return tuple(found)
