"""The shapes of Slack's secrets, for `core.redact`: its tokens (`xoxb-`, `xoxp-`, `xapp-`, ...)
and its incoming-webhook URLs, which carry their credential in the path."""

from __future__ import annotations

from core.redact import WORD_START, SecretShape

__all__ = ["SHAPES"]

SHAPES = (
    SecretShape(
        "slack-webhook",
        r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[\w/-]++",
        ("hooks.slack.com",),
        before="anthropic-key",
    ),
    SecretShape(
        "slack-token",
        WORD_START + r"(?:xox[abeoprs]|xapp)-[A-Za-z0-9-]{4,}+",
        ("xox", "xapp-"),
        before="anthropic-key",
    ),
)
