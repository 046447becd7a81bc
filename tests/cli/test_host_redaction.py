"""The live host keeps no secret: an unreadable payload is quarantined with every secret
redacted, deep fields and strings alike, and the workspace's own tokens are redacted by value
from what people write."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from builders import LEAD, local_workspace, slack_body, slack_message
from secret_samples import CONFIGURED_SECRET, SECRETS, every_secret

from c2a.host import Host
from core.clock import VirtualClock, parse_time
from core.emission import Emission
from core.sqlite_store import SQLiteStore


def leaks(where: str) -> list[str]:
    return [secret for secret in every_secret() if secret in where]


async def _ignore(emissions: list[Emission]) -> None:
    return None


def test_an_unreadable_payload_is_quarantined_and_logged_without_its_secrets(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    unreadable = {
        "type": "event_callback",
        "team_id": "T0LOCAL",
        "token": "verification-token-1234",
        "event": {
            "type": "message",
            "channel": "C0GEN",
            "ts": 1767225601,  # a number where Slack sends a string
            "text": f"try {SECRETS['github-token'][0]}",
            "files": [{"url_private": SECRETS["slack-webhook"][0], "password": "hunter2hunter2"}],
        },
    }

    async def scenario() -> str:
        store = SQLiteStore(str(tmp_path / "ledger.sqlite3"))
        host = Host(
            local_workspace(), store, VirtualClock(parse_time("2026-01-01T00:00:00Z")), _ignore
        )
        await host.start()
        assert await host.receive("slack", unreadable) is None
        rows = store.db.execute("SELECT reason, payload FROM quarantine").fetchall()
        await host.close()
        assert len(rows) == 1
        return repr(rows)

    with caplog.at_level(logging.WARNING):
        quarantined = asyncio.run(scenario())
    assert leaks(quarantined) == []
    assert "verification-token-1234" not in quarantined
    for label in ("secret-field", "github-token", "slack-webhook"):
        assert f"[redacted:{label}]" in quarantined
    assert "event.ts" in quarantined  # the reason is kept
    assert leaks(caplog.text) == []


def test_the_hosts_own_tokens_are_redacted_from_what_people_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_LEAD_BOT_TOKEN", CONFIGURED_SECRET)
    delivered: list[Emission] = []

    async def sink(emissions: list[Emission]) -> None:
        delivered.extend(emissions)

    async def scenario() -> None:
        store = SQLiteStore(str(tmp_path / "ledger.sqlite3"))
        host = Host(
            local_workspace(), store, VirtualClock(parse_time("2026-01-01T00:00:00Z")), sink
        )
        await host.start()
        said = f"<@{LEAD}> is {CONFIGURED_SECRET} still the token?"
        await host.receive("slack", slack_body(slack_message("1767225601.000100", said)), "lead")
        await host.close()

    asyncio.run(scenario())
    assert delivered
    assert CONFIGURED_SECRET not in repr(delivered)
    assert "is [redacted:configured-secret] still" in repr(delivered)
    stored = (tmp_path / "ledger.sqlite3").read_bytes()
    assert CONFIGURED_SECRET.encode() not in stored
