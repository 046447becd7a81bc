"""Secrets in their real shapes, for the redaction tests: dummy values, none of them ever a
working credential, and one chat message that holds every kind."""

from __future__ import annotations

from c2a.platforms import secret_shapes

__all__ = [
    "AWS_SECRET",
    "CONFIGURED_SECRET",
    "PEM",
    "SECRETS",
    "SHAPES",
    "every_secret",
    "message_with_every_secret",
]

# The installed platforms' secret shapes, which every redactor `c2a` builds is given.
SHAPES = secret_shapes()

# Dummy values in the real shapes; none of them was ever a working credential.
SECRETS = {
    "slack-token": [
        "xoxb-1111111111-2222222222222-AbCdEfGhIjKlMnOpQrStUvWx",
        "xoxp-1111111111-2222222222-3333333333333-0123456789abcdef0123456789abcdef",
        "xoxa-2-1111111111-AbCdEf",
        "xoxe-1-My0xLTExMTExMTExMTE",
        "xoxs-1111111111-2222222222",
        "xapp-1-A0LOCAL1234-1111111111111-0123456789abcdef0123456789abcdef",
    ],
    "slack-webhook": [
        "https://hooks.slack.com/services/T0LOCAL00/B0LOCAL00/AbCdEfGhIjKlMnOpQrStUvWx"
    ],
    "discord-token": ["MTIzNDU2Nzg5MDEyMzQ1Njc4OQ.GaBcDe.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789ab"],
    "discord-webhook": [
        "https://discord.com/api/webhooks/123456789012345678/AbCdEf-GhIjKl_MnOpQrStUvWxYz0123",
        "https://canary.discordapp.com/api/v10/webhooks/123456789012345678/AbCdEfGhIjKl",
    ],
    "openai-key": [
        "sk-AbCdEfGhIjKlMnOpQrStT3BlbkFJAbCdEfGhIjKlMnOpQrSt",
        "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_abcdefGHIJ",
    ],
    "anthropic-key": [
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-abcdefghijklmnopqrstuvwxyz"
    ],
    "github-token": [
        "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "gho_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "ghu_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "ghs_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "ghr_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "github_pat_11AAAAAAA0AbCdEfGhIjKl_MnOpQrStUvWxYz0123456789abcdefghijklmnopqrstuvwxyzABCD",
    ],
    "c2a-token": ["c2a_Xk3fQ9-Zp_2LmN8vR4tYw7aB1cD5eF6gH0iJ2kL3mN4"],  # `core.redact.new_token`
    "aws-access-key": ["AKIAIOSFODNN7EXAMPLE", "ASIAIOSFODNN7EXAMPLE"],
    "jwt": [
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
        ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    ],
}
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "-----END RSA PRIVATE KEY-----"
)

# A workspace's own token, as its manifest's variable holds it: no known shape, found by value.
CONFIGURED_SECRET = "lead-bot-token-from-the-environment"


def every_secret() -> list[str]:
    """Every secret value, whole, and a piece from the middle of each long one: neither may be
    seen again (a secret cut in two and half kept is still a leak)."""
    whole = [
        *(s for values in SECRETS.values() for s in values),
        AWS_SECRET,
        PEM,
        "hunter2hunter2",
        "dXNlcjpodW50ZXIy",
        "pa55word-in-url",
        CONFIGURED_SECRET,
    ]
    middles = [s[len(s) // 2 - 6 : len(s) // 2 + 6] for s in whole if len(s) >= 24]
    return whole + middles


def message_with_every_secret() -> str:
    """One message someone might paste: every kind of secret, with ordinary words around."""
    tokens = "\n".join(f"try {s} please" for values in SECRETS.values() for s in values)
    return (
        "@lead the deploy is broken, here is everything I have:\n"
        f"{tokens}\n"
        f"aws_secret_access_key = {AWS_SECRET}\n"
        f"{PEM}\n"
        "password=hunter2hunter2\n"
        "curl -H 'Authorization: Basic dXNlcjpodW50ZXIy' https://api.example.com/v1\n"
        "db at postgres://app:pa55word-in-url@db.internal/app\n"
        f"and the bot's own: {CONFIGURED_SECRET}\n"
        "commit 3f786850e387550fdab836ed7e6dc881de23001b, run 123e4567-e89b-12d3-a456-426614174000"
    )
