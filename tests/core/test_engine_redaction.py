"""Secrets in chat never pass the engine's door: a message's and an edit's text are redacted as
they are ingested, so neither the ledger file, nor a delivery, nor a model's prompt holds them,
and a line the replay cannot read is quarantined redacted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import HUMAN, LEAD, W1, W2, line, run, slack_body, slack_edit, slack_join
from builders import slack_message as message
from secret_samples import CONFIGURED_SECRET, SECRETS, every_secret, message_with_every_secret

BASE = 1767225600


def leaks(where: str) -> list[str]:
    return [secret for secret in every_secret() if secret in where]


def stored_bytes(database: Path) -> str:
    """The ledger as it lies on disk: the file and its write-ahead log, whatever they hold."""
    found = b""
    for path in (database, database.with_name(database.name + "-wal")):
        if path.exists():
            found += path.read_bytes()
    return found.decode("utf-8", "replace")


def test_a_pasted_secret_reaches_neither_the_ledger_nor_a_delivery_nor_a_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_LEAD_BOT_TOKEN", CONFIGURED_SECRET)
    pasted = message_with_every_secret().replace("@lead", f"<@{LEAD}>")
    edited = f"<@{LEAD}> also {SECRETS['github-token'][0]} and {CONFIGURED_SECRET}"
    start = "2026-01-01T00:00:00Z"
    lines = [line(start, "slack", slack_body(slack_join(u))) for u in (LEAD, W1, W2)]
    lines.append(line(start, "slack", slack_body(message(f"{BASE + 1}.000100", pasted))))
    edit = slack_edit(f"{BASE + 1}.000100", f"{BASE + 2}.000100", pasted, edited, user=HUMAN)
    lines.append(line("2026-01-01T00:00:02Z", "slack", slack_body(edit)))
    database = tmp_path / "ledger.sqlite3"

    records, stats, _ = run(lines, store=str(database))

    assert stats.errors == 0
    output = json.dumps(records)
    assert "[redacted:private-key]" in output  # the message was delivered, less its secrets
    assert leaks(output) == []
    # The edit came inside the compose window, so the model's one turn reads the new text.
    prompts = [r["turn"]["prompt"] for r in records if "turn" in r]
    assert len(prompts) == 1
    assert "also [redacted:github-token] and [redacted:configured-secret]" in prompts[0]
    assert leaks(stored_bytes(database)) == []
    assert "[redacted:aws-secret]" in stored_bytes(database)


def test_a_line_the_replay_cannot_read_is_quarantined_and_reported_redacted(
    tmp_path: Path,
) -> None:
    token = SECRETS["slack-token"][0]
    unreadable = {"type": "event_callback", "event": {"type": "message", "text": token}}
    not_json = f'{{"at": "2026-01-01T00:00:00Z", "token": "{token}"'
    database = tmp_path / "ledger.sqlite3"

    _, stats, report = run(
        [line("2026-01-01T00:00:00Z", "slack", unreadable), not_json], store=str(database)
    )

    assert stats.errors == 2
    assert leaks(report) == []
    stored = stored_bytes(database)
    assert leaks(stored) == []
    assert stored.count("[redacted:slack-token]") == 2
