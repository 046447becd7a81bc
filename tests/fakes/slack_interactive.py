"""The fake Slack's interactive payloads: what Slack sends an app when someone presses a
button (`block_actions`), in Slack's wire shape."""

from __future__ import annotations

from typing import Any

__all__ = ["APP_ID", "block_actions"]

JsonDict = dict[str, Any]
APP_ID = "A111"  # the fake Slack's app


def block_actions(message: JsonDict, channel: str, action_id: str, user: str) -> JsonDict:
    """The `block_actions` payload Slack sends when `user` presses the button `action_id` of
    `message` (a stored one, blocks included) in `channel`."""
    buttons = [
        element
        for block in message.get("blocks") or []
        if block.get("type") == "actions"
        for element in block["elements"]
    ]
    button = next(b for b in buttons if b["action_id"] == action_id)
    return {
        "type": "block_actions",
        "team": {"id": message.get("team", "T111"), "domain": "fake"},
        "user": {"id": user, "username": user.lower(), "team_id": message.get("team", "T111")},
        "api_app_id": APP_ID,
        "token": "verification-token-not-a-secret",
        "container": {"type": "message", "message_ts": message["ts"], "channel_id": channel},
        "trigger_id": "1.2.trigger",
        "channel": {"id": channel, "name": channel.lower()},
        "message": message,
        "response_url": "https://hooks.slack.invalid/actions/T111/1/fake",
        "actions": [
            {
                "type": "button",
                "block_id": "b1",
                "action_id": action_id,
                "text": button["text"],
                "value": button.get("value", ""),
                "style": button.get("style"),
                "action_ts": "1767225600.999999",
            }
        ],
    }
