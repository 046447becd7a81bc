"""What an agent says or does with the chat tools is redacted before it is stored: a model
cannot echo a secret into a channel through the outbox, nor keep one in the audit table or a
delivery's reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from secret_samples import (
    CONFIGURED_SECRET,
    SECRETS,
    SHAPES,
    every_secret,
    message_with_every_secret,
)
from world import DM, ROLE, scenario

from core.engine import Engine
from core.errors import ToolError
from core.redact import Redactor
from core.sqlite_store import SQLiteStore
from harness_bridge.tools import ChatTools

ROOT = Path(__file__).resolve().parents[2]


def leaks(where: str) -> list[str]:
    return [secret for secret in every_secret() if secret in where]


def test_a_model_echoing_secrets_posts_and_stores_only_their_labels(tmp_path: Path) -> None:
    database = tmp_path / "ledger.sqlite3"

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        engine.redactor = Redactor([CONFIGURED_SECRET], SHAPES)
        lead = tools["lead"]
        said = {"target": {"conversation": "D0LEAD"}, "inReplyTo": DM, "idempotencyKey": "k-1"}
        await lead.call("chat_send_message", {**said, "text": message_with_every_secret()})
        async with store.transaction():
            await store.outbox_mark(
                "lead/k-1", "sent", "2026-01-01T00:00:11Z", {"messageId": "171.0"}
            )
        token = SECRETS["openai-key"][0]
        await lead.call("chat_edit_message", {"idempotencyKey": "k-1", "text": f"key {token}"})
        await tools["worker-1"].call(
            "chat_defer", {"eventId": ROLE, "reason": f"waiting on {CONFIGURED_SECRET}"}
        )
        with pytest.raises(ToolError):
            await lead.call("chat_claim", {"eventId": SECRETS["jwt"][0]})

        texts = [row[0] for row in store.db.execute("SELECT action FROM outbox")]
        assert any("[redacted:private-key]" in text for text in texts)
        assert any("key [redacted:openai-key]" in text for text in texts)
        audit = " ".join(row[0] for row in store.db.execute("SELECT detail FROM audit"))
        assert "[redacted:jwt]" in audit
        for table in ("outbox", "audit", "deliveries"):
            rows = store.db.execute(f"SELECT * FROM {table}").fetchall()
            assert leaks(repr(rows)) == [], table

    scenario(test, str(database))
    stored = database.read_bytes().decode("utf-8", "replace")
    assert leaks(stored) == []


def test_every_outbound_action_is_queued_through_the_engine() -> None:
    """`Engine.queue` is the one door to the outbox: a direct `put_outbox` call elsewhere
    would send text nobody redacted."""
    callers = [
        str(path.relative_to(ROOT))
        for package in ("core", "c2a", "adapters", "harness_bridge")
        for path in sorted((ROOT / package).rglob("*.py"))
        if re.search(r"\.put_outbox\(", path.read_text())
    ]
    # The outbox's QueueBell stands in front of the ledger and only passes the engine's calls on.
    assert callers == ["core/engine.py", "core/outbox.py"]


def test_half_of_a_utf16_pair_in_a_models_answer_goes_out_as_a_replacement_character() -> None:
    # A streamed answer's chunks are JSON: a lone `\\ud800` escape in one made a string that
    # the outbox could not store, and the turn ended with a traceback. (In tool arguments the
    # schema refuses it, and the model is told why.)
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        sent = await tools["lead"].reply_with_text([DM], "on it \ud800 now")
        assert sent is not None
        (text,) = store.db.execute(
            "SELECT json_extract(action, '$.text') FROM outbox "
            "WHERE json_extract(action, '$.action') = 'send'"
        ).fetchone()
        assert text == "on it \ufffd now"

    scenario(test)
