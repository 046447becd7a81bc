"""The PostgreSQL `Ledger`: the `events` and `receipts` tables."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import orjson

from core.postgres.connection import Connection
from core.store import ConversationMark, LedgerEntry
from core.store_rows import (
    EVENT_COLUMNS,
    VERSION_KINDS,
    dumps,
    entry_from_row,
    receipts_between,
    receipts_by_seq,
)

__all__ = ["PostgresLedger"]

# Only a new id reaches the insert, so a second copy takes no number from the sequence.
_APPEND = (
    "INSERT INTO events (id, ts, kind, by, data, conversation, thread) "
    "SELECT %s, %s, %s, %s, %s::json, %s, %s "
    "WHERE NOT EXISTS (SELECT 1 FROM events WHERE id = %s) "
    "ON CONFLICT (id) DO NOTHING RETURNING seq"
)
_PAGE = 1000
_RECEIPTS_BETWEEN = receipts_between("%s")
# A message and its edits: the conversation's events by index, then by the native id in `data`.
_MESSAGE_EVENTS = (
    f"SELECT {EVENT_COLUMNS} FROM events WHERE conversation = %s AND kind IN (%s, %s) "
    "AND data ->> 'message_id' = %s AND data ->> 'platform' = %s ORDER BY seq"
)


class PostgresLedger(Connection):
    """Events keyed by `seq`, an identity column: numbers only grow, and one taken by a
    transaction that rolled back is skipped, never reused. The conversation and thread are
    copied out of `data` into their own columns, indexed for `seen_by` and
    `conversation_marks`. Several processes may append at once, so the ledger is `shared`."""

    shared = True

    async def append(
        self, event_id: str, kind: str, by: str, data: Mapping[str, Any], ts: str
    ) -> int | None:
        conversation = data.get("conversation") or {}
        place = (conversation.get("id", ""), conversation.get("thread_id") or "")
        async with self.transaction():  # outside one, its own: it holds the ledger
            row = await self._one(_APPEND, (event_id, ts, kind, by, dumps(data), *place, event_id))
        return None if row is None else int(row[0])

    async def sequence_of(self, event_id: str) -> int | None:
        row = await self._one("SELECT seq FROM events WHERE id = %s", (event_id,))
        return None if row is None else int(row[0])

    async def held(self, event_ids: Sequence[str]) -> set[str]:
        rows = await self._all("SELECT id FROM events WHERE id = ANY(%s)", (list(event_ids),))
        return {row[0] for row in rows}

    async def entry(self, seq: int) -> LedgerEntry | None:
        row = await self._one(f"SELECT {EVENT_COLUMNS} FROM events WHERE seq = %s", (seq,))
        return None if row is None else entry_from_row(row)

    async def ledger(self, since_seq: int = 0) -> AsyncIterator[LedgerEntry]:
        # A page at a time, by `seq`: no cursor stays open while the caller uses the store.
        while rows := await self._all(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE seq > %s ORDER BY seq LIMIT {_PAGE}",
            (since_seq,),
        ):
            for row in rows:
                yield entry_from_row(row)
            since_seq = int(rows[-1][0])

    async def add_receipt(self, event_id: str, agent: str) -> bool:
        return (
            await self._count(
                "INSERT INTO receipts (event_id, agent) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (event_id, agent),
            )
            == 1
        )

    async def receipts(self, event_id: str) -> list[str]:
        rows = await self._all(
            "SELECT agent FROM receipts WHERE event_id = %s ORDER BY agent", (event_id,)
        )
        return [str(row[0]) for row in rows]

    async def receipts_between(self, after_seq: int, upto_seq: int) -> dict[int, list[str]]:
        return receipts_by_seq(await self._all(_RECEIPTS_BETWEEN, (after_seq, upto_seq)))

    async def fill_text(self, event_id: str, text: str) -> None:
        data = await self._data(event_id)
        if data is not None and not data.get("text") and not data.get("deleted"):
            data["text"] = text
            await self._set_data(event_id, data)

    async def tombstone(self, event_ids: list[str]) -> None:
        for event_id in event_ids:
            data = await self._data(event_id)
            if data is not None:
                data["text"] = ""
                data["deleted"] = True
                await self._set_data(event_id, data)

    async def message_events(
        self, platform: str, conversation_id: str, message_id: str
    ) -> list[LedgerEntry]:
        args = (conversation_id, *VERSION_KINDS, message_id, platform)
        return [entry_from_row(row) for row in await self._all(_MESSAGE_EVENTS, args)]

    async def _data(self, event_id: str) -> dict[str, Any] | None:
        row = await self._one("SELECT data FROM events WHERE id = %s", (event_id,))
        if row is None:
            return None
        data: dict[str, Any] = orjson.loads(row[0])
        return data

    async def _set_data(self, event_id: str, data: dict[str, Any]) -> None:
        await self._execute(
            "UPDATE events SET data = %s::json WHERE id = %s", (dumps(data), event_id)
        )

    async def conversation_marks(
        self, id_prefix: str, kind: str, *, threads: bool = False
    ) -> list[ConversationMark]:
        group = "conversation, thread" if threads else "conversation"
        rows = await self._all(
            "SELECT e.conversation, e.id, e.ts, "
            "coalesce(e.data -> 'conversation' ->> 'kind', ''), e.thread FROM events e JOIN ("
            "SELECT max(seq) AS seq FROM events WHERE kind = %s AND conversation != '' "
            f"AND starts_with(id, %s) GROUP BY {group}) newest ON e.seq = newest.seq "
            "ORDER BY e.seq",
            (kind, id_prefix),
        )
        return [
            ConversationMark(
                str(conversation),
                str(where),
                str(event_id),
                str(ts),
                str(thread) if threads else "",
            )
            for conversation, event_id, ts, where, thread in rows
        ]
