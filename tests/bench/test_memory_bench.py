"""The memory benchmark's own code: the bulk-built ledger holds what a host would have written,
and a tiny run of the whole script prints every figure (the full run is `make bench`)."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import big_ledger
import memory


def test_the_clone_gives_every_conversation_its_own_events_receipts_deliveries_and_outbox(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    built = big_ledger.build(path, rows=600, conversations=30)
    assert (built.events, built.conversations) == (600, 30)
    db = sqlite3.connect(path)
    per_conversation = db.execute(
        "SELECT conversation, count(*) FROM events GROUP BY conversation"
    ).fetchall()
    assert len(per_conversation) == 30 and {n for _, n in per_conversation} == {20}
    # Every event id names its own conversation, and its receipts and deliveries follow it.
    mismatched = db.execute(
        "SELECT count(*) FROM events WHERE instr(id, ':' || conversation || ':') = 0 "
        "OR instr(data, '\"id\":\"' || conversation || '\"') = 0"
    ).fetchone()[0]
    assert mismatched == 0
    receipts = db.execute("SELECT count(*) FROM receipts JOIN events ON events.id = event_id")
    assert receipts.fetchone()[0] == built.receipts == 3 * 600
    deliveries = db.execute(
        "SELECT count(*) FROM deliveries d JOIN events e ON e.seq = d.seq AND e.id = d.event_id"
    )
    assert deliveries.fetchone()[0] == built.deliveries > 0
    elsewhere = db.execute(
        "SELECT count(*) FROM deliveries d JOIN events e ON e.seq = d.seq "
        "WHERE instr(coalesce(d.continues, '') || coalesce(d.supersedes, ''), ':C') > 0 "
        "AND instr(coalesce(d.continues, '') || coalesce(d.supersedes, ''), e.conversation) = 0"
    )
    assert elsewhere.fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM deliveries WHERE status = 'pending'").fetchone() == (0,)
    kinds = dict(db.execute("SELECT kind, count(*) FROM events GROUP BY kind").fetchall())
    assert kinds["x.c2a.member_joined"] == 3 * 30
    assert db.execute("SELECT count(*) FROM events WHERE thread != ''").fetchone()[0] > 0
    # Each answered question left its `seen` reaction and its reply in the outbox, sent.
    answered = db.execute("SELECT count(*) FROM deliveries WHERE policy = 'must_respond'")
    assert built.outbox == 2 * answered.fetchone()[0] > 0
    sent = db.execute(
        "SELECT count(*) FROM outbox o JOIN events e ON instr(o.idempotency_key, e.id) = 1 "
        "WHERE o.status = 'sent'"
    )
    assert sent.fetchone()[0] == built.outbox


def test_a_tiny_run_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert memory.main(["--rows", "400", "--conversations", "20", "--more", "5"]) == 0
    printed = capsys.readouterr().out
    assert "ledger: 400 rows in 20 conversations" in printed
    assert "start (Engine.rebuild folds 400 rows)" in printed
    assert "after 5 more messages" in printed
    assert "target: RSS under 150 MB: met" in printed
    assert "the clean stop (the memory's snapshot saved): " in printed
    assert "the start after it (the snapshot read back, 405 rows held): " in printed
    reads = "a running host's repeated reads, ms with the indexes of migration 3 / without: "
    assert reads + "overdue " in printed and ", gauges " in printed
