"""The SQLite `Ledger`: the `events` and `receipts` tables."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import orjson

from core.sqlite.connection import Connection, dumps
from core.store import ConversationMark, LedgerEntry
from core.store_rows import (
    EVENT_COLUMNS,
    VERSION_KINDS,
    entry_from_row,
    receipts_between,
    receipts_by_seq,
)

__all__ = ["SQLiteLedger"]

# A message and its edits: the conversation's events by index, then by the native id in `data`.
_MESSAGE_EVENTS = (
    f"SELECT {EVENT_COLUMNS} FROM events WHERE conversation = ? AND kind IN (?, ?) "
    "AND json_extract(data, '$.message_id') = ? AND json_extract(data, '$.platform') = ? "
    "ORDER BY seq"
)
_RECEIPTS_BETWEEN = receipts_between("?")
_BATCH = 500  # ids a statement asks about: well under SQLite's limit on parameters


class SQLiteLedger(Connection):
    """Events keyed by `seq`, the rowid: SQLite gives max + 1, and the ledger never deletes its
    newest row (retention keeps it: `core.store_prune`), so sequence numbers only grow. The
    conversation and thread are copied out of `data` into their own columns, indexed for
    `seen_by` and `conversation_marks`. One process owns the file, so the ledger is not
    `shared`."""

    shared = False

    async def append(
        self, event_id: str, kind: str, by: str, data: Mapping[str, Any], ts: str
    ) -> int | None:
        conversation = data.get("conversation") or {}
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO events (id, ts, kind, by, data, conversation, thread) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                event_id,
                ts,
                kind,
                by,
                dumps(data),
                conversation.get("id", ""),
                conversation.get("thread_id") or "",
            ),
        )
        if cursor.rowcount == 0:
            return None
        return cursor.lastrowid

    async def sequence_of(self, event_id: str) -> int | None:
        row = self.db.execute("SELECT seq FROM events WHERE id = ?", (event_id,)).fetchone()
        return None if row is None else int(row[0])

    async def held(self, event_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(event_ids), _BATCH):
            batch = event_ids[start : start + _BATCH]
            marks = ", ".join("?" * len(batch))
            rows = self.db.execute(f"SELECT id FROM events WHERE id IN ({marks})", batch)
            found.update(row[0] for row in rows)
        return found

    async def entry(self, seq: int) -> LedgerEntry | None:
        row = self.db.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE seq = ?", (seq,)
        ).fetchone()
        return None if row is None else entry_from_row(row)

    async def ledger(self, since_seq: int = 0) -> AsyncIterator[LedgerEntry]:
        for row in self._rows(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq", (since_seq,)
        ):
            yield entry_from_row(row)

    async def add_receipt(self, event_id: str, agent: str) -> bool:
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO receipts (event_id, agent) VALUES (?, ?)", (event_id, agent)
        )
        return cursor.rowcount == 1

    async def receipts(self, event_id: str) -> list[str]:
        rows = self.db.execute(
            "SELECT agent FROM receipts WHERE event_id = ? ORDER BY agent", (event_id,)
        )
        return [str(row[0]) for row in rows]

    async def receipts_between(self, after_seq: int, upto_seq: int) -> dict[int, list[str]]:
        return receipts_by_seq(self.db.execute(_RECEIPTS_BETWEEN, (after_seq, upto_seq)))

    async def fill_text(self, event_id: str, text: str) -> None:
        data = self._data(event_id)
        if data is not None and not data.get("text") and not data.get("deleted"):
            data["text"] = text
            self._set_data(event_id, data)

    async def tombstone(self, event_ids: list[str]) -> None:
        for event_id in event_ids:
            data = self._data(event_id)
            if data is not None:
                data["text"] = ""
                data["deleted"] = True
                self._set_data(event_id, data)

    async def message_events(
        self, platform: str, conversation_id: str, message_id: str
    ) -> list[LedgerEntry]:
        args = (conversation_id, *VERSION_KINDS, message_id, platform)
        return [entry_from_row(row) for row in self.db.execute(_MESSAGE_EVENTS, args)]

    def _data(self, event_id: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT data FROM events WHERE id = ?", (event_id,)).fetchone()
        if row is None:
            return None
        data: dict[str, Any] = orjson.loads(row[0])
        return data

    def _set_data(self, event_id: str, data: dict[str, Any]) -> None:
        self.db.execute("UPDATE events SET data = ? WHERE id = ?", (dumps(data), event_id))

    async def conversation_marks(
        self, id_prefix: str, kind: str, *, threads: bool = False
    ) -> list[ConversationMark]:
        group = "conversation, thread" if threads else "conversation"
        # Only the conversation's kind of each record's data, read in SQL: a ledger holds a
        # mark for every thread it ever saw, and their whole records were most of a start's
        # memory (100 MB for 97,000 threads).
        rows = self.db.execute(
            "SELECT e.conversation, e.id, e.ts, "
            "coalesce(json_extract(e.data, '$.conversation.kind'), ''), e.thread FROM events e "
            "JOIN (SELECT max(seq) AS seq FROM events WHERE kind = ? AND conversation != '' "
            f"AND substr(id, 1, length(?)) = ? GROUP BY {group}) newest ON e.seq = newest.seq "
            "ORDER BY e.seq",
            (kind, id_prefix, id_prefix),
        )
        marks = []
        for conversation, event_id, ts, where, thread in rows:
            place = str(thread) if threads else ""
            marks.append(
                ConversationMark(str(conversation), str(where), str(event_id), str(ts), place)
            )
        return marks
