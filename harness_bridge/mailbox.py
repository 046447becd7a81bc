"""The harness's inbox: `chat/deliver` is acknowledged only once the event is stored here.

The mailbox is the harness's own durable copy for acknowledgement and turn assembly, not the
truth (the host's ledger is). It deduplicates by `eventId`, so a redelivery after a crash or a
retry is acknowledged again but never stored, or injected, twice. It keeps the newest `KEPT`
entries: the host sends again only what it has no acknowledgement for (a retry, at most a
delivery window behind), so older ones can never come back, and a harness that runs for months
does not hold every event it was ever told (about a kilobyte each).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import ValidationError

from harness_bridge.rpc import INVALID_PARAMS, Connection, RpcError
from harness_bridge.wire import METHOD_CANCELLED, METHOD_DELIVER, CancelledParams, parse_deliver

__all__ = ["KEPT", "Mailbox", "MailboxEntry", "serve_mailbox"]

KEPT = 10_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS mailbox (
    n INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL UNIQUE,
    params TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    cancelled TEXT
);
"""


@dataclass(frozen=True, slots=True)
class MailboxEntry:
    """One stored delivery, in arrival order, with the reason it was cancelled (if it was)."""

    n: int
    event_id: str
    params: dict[str, Any]
    attempt: int
    cancelled: str | None


class Mailbox:
    """A SQLite inbox (a file survives the harness's restarts; `:memory:` does not)."""

    def __init__(self, path: str = ":memory:", *, kept: int = KEPT) -> None:
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)
        self.kept = kept

    def store(self, params: dict[str, Any]) -> bool:
        """Keep a delivery; False when its `eventId` is already here (a redelivery)."""
        self._db.execute(
            "DELETE FROM mailbox WHERE n <= (SELECT MAX(n) FROM mailbox) - ?", (self.kept - 1,)
        )
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO mailbox (event_id, params, attempt) VALUES (?, ?, ?)",
            (
                params["eventId"],
                orjson.dumps(params).decode(),
                params["reliability"]["attempt"],
            ),
        )
        return cursor.rowcount == 1

    def cancel(self, event_id: str, reason: str) -> bool:
        """Mark a delivery cancelled; True the first time. One not here yet is kept as
        cancelled all the same, so that its delivery, when it comes (the host may have read it
        before the message was deleted, and send it after the cancellation), is acknowledged
        as a repeat and never stored or injected."""
        cursor = self._db.execute(
            "INSERT INTO mailbox (event_id, params, attempt, cancelled) VALUES (?, 'null', 0, ?) "
            "ON CONFLICT (event_id) DO UPDATE SET cancelled = excluded.cancelled "
            "WHERE cancelled IS NULL",
            (event_id, reason),
        )
        return cursor.rowcount == 1

    def entries(self) -> list[MailboxEntry]:
        """The deliveries stored, in arrival order (not the cancellations that came first)."""
        rows = self._db.execute(
            "SELECT n, event_id, params, attempt, cancelled FROM mailbox "
            "WHERE params != 'null' ORDER BY n"
        ).fetchall()
        return [MailboxEntry(r[0], r[1], orjson.loads(r[2]), r[3], r[4]) for r in rows]

    def close(self) -> None:
        self._db.close()


def serve_mailbox(
    connection: Connection,
    mailbox: Mailbox,
    *,
    on_new: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Answer `chat/deliver` by storing the event, then acknowledging it
    (`{"accepted": true, "duplicate": bool}`), and record `notifications/cancelled`.
    A delivery that does not validate is refused with an invalid-params error saying why;
    `on_new` sees each event the first time it is stored (where turn assembly starts)."""

    async def deliver(params: dict[str, Any] | None) -> dict[str, Any]:
        try:
            parsed = parse_deliver(params or {})
        except ValidationError as exc:
            raise RpcError(INVALID_PARAMS, f"invalid chat/deliver params: {exc}") from None
        wire = parsed.to_wire()
        new = mailbox.store(wire)
        if new and on_new is not None:
            on_new(wire)
        return {"accepted": True, "duplicate": not new}

    async def cancelled(params: dict[str, Any] | None) -> None:
        try:
            notice = CancelledParams.model_validate(params or {})
        except ValidationError:
            return
        mailbox.cancel(notice.event_id, notice.reason.value)

    connection.on_request(METHOD_DELIVER, deliver)
    connection.on_notification(METHOD_CANCELLED, cancelled)
