"""`c2a replay` commits a chunk of lines at a time (`batch`): the outputs, the report and the
ledger are the same, byte for byte, whatever the chunk, down to a transaction per line."""

from __future__ import annotations

import asyncio
import io
import sqlite3
from pathlib import Path

from builders import HUMAN, HUMAN2, LEAD, W1, flat_joined, flat_say, local_workspace

from c2a.replay import replay
from core.sqlite_store import SQLiteStore

EXAMPLE = Path(__file__).resolve().parents[2] / "manifests" / "examples" / "local-trace.jsonl"


def _trace() -> list[str]:
    """The example trace, then a channel of mentions, questions, chatter and a bad line."""
    lines = EXAMPLE.read_text().splitlines() + flat_joined()
    for second in range(1, 160):
        user = HUMAN if second % 3 else HUMAN2
        if second % 7 == 0:
            text = f"<@{LEAD if second % 2 else W1}> can you check the deploy {second}?"
        elif second % 11 == 0:
            text = "anyone know why staging is red?"
        else:
            text = f"chatter {second}"
        lines.append(flat_say(second * 2, text, user))
        if second == 80:
            lines.append("{not json")
    return lines


def _replay(
    tmp_path: Path, trace: list[str], batch: int
) -> tuple[str, str, list[tuple[object, ...]]]:
    ledger = tmp_path / f"batch-{batch}.sqlite3"
    out, report = io.StringIO(), io.StringIO()
    asyncio.run(
        replay(local_workspace(), trace, SQLiteStore(str(ledger)), out, report, batch=batch)
    )
    db = sqlite3.connect(ledger)
    rows = [
        row
        for table in ("events", "receipts", "deliveries", "outbox", "escalations", "quarantine")
        for row in db.execute(f"SELECT '{table}', * FROM {table} ORDER BY 2, 3")
    ]
    db.close()
    return out.getvalue(), report.getvalue(), rows


def test_a_transaction_per_line_and_one_per_chunk_give_the_same_replay(tmp_path: Path) -> None:
    trace = _trace()  # made once: each Slack body takes the next delivery id
    per_line = _replay(tmp_path, trace, 1)
    assert per_line[0].count("chat/deliver") > 100 and "not JSON" in per_line[1]
    for batch in (7, 500):
        assert _replay(tmp_path, trace, batch) == per_line
