"""A running host with `retention:` prunes by itself: at its start what is older than the
retention is gone from its ledger, and its log says what went. In-process, with the real host
and a SQLite ledger written before the start."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from builders import LOCAL
from webchat_run import webchat_run

from core.codec import LEDGER_KINDS, event_to_data
from core.events import Author, ChatEvent, Conversation, ConversationKind, EventKind
from core.sqlite_store import SQLiteStore

OLD, NEW = "2020-01-01T00:00:00Z", "2999-01-01T00:00:00Z"


def said(event_id: str, ts: str) -> dict[str, object]:
    """ana's message in the web chat's #general, as the ledger keeps it."""
    event = ChatEvent(
        event_id=event_id,
        kind=EventKind.MESSAGE,
        platform="webchat",
        workspace_id="local",
        conversation=Conversation("general", ConversationKind.CHANNEL),
        author=Author("ana"),
        created_at=datetime.fromisoformat(ts),
        text="hello",
    )
    return event_to_data(event)


async def kept(file: Path) -> tuple[list[str], int]:
    """The ledger's event ids and how many audit records it holds."""
    store = SQLiteStore(str(file))
    await store.open()
    try:
        return [e.id async for e in store.ledger()], len(await store.audit_records(10))
    finally:
        await store.close()


def retaining(folder: Path) -> tuple[Path, dict[str, Any]]:
    """The local workspace with `retention: {days: 30}` and no harness, written in `folder`."""
    data = yaml.safe_load(LOCAL.read_text())
    for config in data["agents"].values():
        for part in ("slack", "discord", "harness"):
            config.pop(part, None)
    data["retention"] = {"days": 30}
    manifest = folder / "team.yaml"
    manifest.write_text(yaml.safe_dump(data))
    return manifest, data


def test_a_host_with_retention_prunes_its_ledger_as_it_starts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manifest, data = retaining(tmp_path)
    ledger = tmp_path / "data" / f"{data['workspace']}.sqlite3"
    ledger.parent.mkdir()

    async def scenario() -> tuple[list[str], int]:
        store = SQLiteStore(str(ledger))
        await store.open()
        message = LEDGER_KINDS[EventKind.MESSAGE]
        for event_id, ts in (("m1", OLD), ("m2", NEW)):
            await store.append(event_id, message, "human:ana", said(event_id, ts), ts)
        await store.audit("lead", "send", "ok", {}, OLD)
        await store.close()
        async with webchat_run(manifest, ledger.parent):
            for _ in range(200):
                if any("pruned" in r.getMessage() for r in caplog.records):
                    break
                await asyncio.sleep(0.02)
        return await kept(ledger)

    with caplog.at_level(logging.INFO, logger="c2a.run"):
        ids, audits = asyncio.run(scenario())
    assert (ids[0], audits) == ("m2", 0)  # then what the host wrote as it started
    assert "m1" not in ids
    logged = [r.getMessage() for r in caplog.records if "pruned" in r.getMessage()]
    assert logged == [f"{data['workspace']}: pruned what is older than 30 days: events 1, audit 1"]


def test_a_host_with_retention_prunes_its_web_chats_history_as_it_starts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manifest, data = retaining(tmp_path)
    history = tmp_path / "data" / f"{data['workspace']}.webchat.jsonl"
    history.parent.mkdir()
    lines = [
        {
            "type": "message",
            "id": "1",
            "channel": "general",
            "user": "ana",
            "text": "hi",
            "ts": OLD,
        },
        {
            "type": "message",
            "id": "2",
            "channel": "general",
            "user": "ana",
            "text": "yo",
            "ts": NEW,
        },
    ]
    history.write_bytes(
        b"".join(orjson.dumps({**line, "workspace": "local"}) + b"\n" for line in lines)
    )

    async def scenario() -> list[str]:
        async with webchat_run(manifest, history.parent) as (_, chat, _):
            for _ in range(200):
                if any("pruned" in r.getMessage() for r in caplog.records):
                    break
                await asyncio.sleep(0.02)
            return sorted(chat.history.messages)

    with caplog.at_level(logging.INFO, logger="c2a.run"):
        shown = asyncio.run(scenario())
    assert shown == ["2"]  # what the page shows
    kept = [orjson.loads(line) for line in history.read_bytes().splitlines()]
    assert [line["id"] for line in kept if line["type"] == "message"] == ["2"]
    logged = [r.getMessage() for r in caplog.records if "pruned" in r.getMessage()]
    assert len(logged) == 1 and logged[0].endswith("webchat messages 1"), logged
