"""The shapes of Discord's secrets, for `core.redact`: its webhook URLs, which carry their
credential in the path, and its bot tokens (three dot-separated parts)."""

from __future__ import annotations

from core.redact import WORD_START, SecretShape

__all__ = ["SHAPES"]

SHAPES = (
    SecretShape(
        "discord-webhook",
        r"https?://(?:(?:canary|ptb)\.)?discord(?:app)?\.com/api(?:/v\d{1,2})?"
        r"/webhooks/\d{5,25}/[\w-]++",
        ("/webhooks/",),
        before="anthropic-key",
    ),
    # After the JWT rule: a JWT has the same three parts and is named for what it is.
    SecretShape(
        "discord-token",
        WORD_START + r"[\w-]{23,28}\.[\w-]{6}\.[\w-]{27,}+",
        (".",),
        before="authorization",
    ),
)
