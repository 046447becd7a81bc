"""Sending what the outbox holds, at most once visibly: the port each platform implements and
the loop that drives it.

Every outbound action is already in the outbox under its idempotency key before anything is
sent. An attempt is marked `sending` (committed) before the platform is called and `sent` after;
a crash in between leaves it `sending`, which becomes `ambiguous` on restart, and an ambiguous
action is looked for on the platform before it is ever sent again. Only a row still due is
marked `sending`: one read before the transaction that queued it was rolled back (the ledger's
connection is shared, so a drain may read what another task has not committed) is not there,
and is never sent. An attempt's outcome that the ledger cannot take (the transaction it joined
was rolled back, the database is away) is kept and written first at the next round, so a
running process never leaves an action `sending`. An ambiguous action whose platform refuses
for good to say whether it landed (the channel is gone, the bot was removed) fails for good.

An action is handed to its sender as soon as the transaction that queued it commits:
`QueueBell` stands in front of the ledger and rings the outbox's `due` event then, and
`Outbox.run` waits on that event. Its poll (`every`) is only the fallback that retries what
failed transiently or could not be checked yet.

The outbox stores records (`core.action_records.to_record`); each is read back into its typed
`Action` before a sender sees it, and a record that cannot be read (a field missing or of the
wrong kind) is marked failed for good, its reason logged: retrying cannot mend it.

An action that fails for good is also kept in the audit log (`what: outbox`, outcome
`failed`, the key, the action's kind and conversation, and the error passed through `clean`,
the host's redactor), where `c2a audit` shows people what never reached the platform and why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from core.action_records import from_record
from core.actions import Action, Post, private_person
from core.clock import Clock, format_time
from core.errors import PermanentSendError, StoreError, TransientSendError
from core.postgres.outage import during_outage
from core.store import OutboxEntry, Store, entry_of

__all__ = ["Outbox", "QueueBell", "Sender"]

log = logging.getLogger(__name__)


class Sender(Protocol):
    """One platform's outbound side, matching on the typed action. `send` performs an action
    and returns what identifies the result (e.g. the new message's id); it raises
    TransientSendError or PermanentSendError, and any other exception means the outcome is
    unknown. `find` looks on the platform for an earlier attempt of the action (by its
    idempotency key) and returns its result, or None."""

    async def send(self, action: Action) -> dict[str, Any]: ...

    async def find(self, action: Action) -> dict[str, Any] | None: ...


class QueueBell:
    """The ledger, ringing `due` once a transaction that queued an outbound action has
    committed (at once for one queued outside any transaction). Everything else is the store's
    own (`__getattr__`), so this is a `Store` wherever one is taken.

    Transactions nest and are joined by other tasks' blocks, so the ring waits until every
    block opened through the bell has ended: by then the outermost one has committed. A block
    that rolled back rings too; the outbox then finds nothing new, which costs one read."""

    def __init__(self, store: Store, due: asyncio.Event | None = None) -> None:
        self.store = store
        self.due = due or asyncio.Event()
        self._open = 0
        self._queued = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        self._open += 1
        try:
            async with self.store.transaction():
                yield
        finally:
            self._open -= 1
            self._ring_if_queued()

    async def put_outbox(self, key: str, agent: str, action: Mapping[str, Any], at: str) -> bool:
        queued = await self.store.put_outbox(key, agent, action, at)
        self._queued = self._queued or queued
        self._ring_if_queued()
        return queued

    def _ring_if_queued(self) -> None:
        if self._queued and not self._open:
            self._queued = False
            self.due.set()


class Outbox:
    """Drives the outbox through the platforms' senders."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        senders: Mapping[str, Sender],
        *,
        due: asyncio.Event | None = None,
        holder: str = "",
        clean: Callable[[str], str] = str,
    ) -> None:
        """`due` is the event that says something was queued (a `QueueBell`'s); `holder` names
        this process where several drain one ledger (`OutboxStore.outbox_take`); `clean`
        redacts an error before the audit log keeps it."""
        self.store = store
        self.clock = clock
        self.senders = senders
        self.due = due or asyncio.Event()
        self.holder = holder
        self.clean = clean
        # Outcomes the ledger could not take yet, by key: written first at the next round.
        self._unrecorded: dict[str, Callable[[], Awaitable[None]]] = {}

    def wake(self) -> None:
        """Something is due now: the running loop drains at once."""
        self.due.set()

    async def run(self, every: float, stopping: Callable[[], bool], name: str = "outbox") -> None:
        """Drain whenever woken, and every `every` seconds for retries, until `stopping()` is
        true after a drain. A round that fails is logged (as `name`'s); the next one goes on."""
        while True:
            self.due.clear()
            try:
                await self.drain()
            except Exception as exc:  # one bad round must not end sending
                said = log.debug if during_outage(exc) else log.error  # said once already
                said("%s: outbox round failed: %s", name, exc)
            if stopping():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.due.wait(), every)

    async def recover(self) -> int:
        """Call once at start: attempts interrupted by a crash become `ambiguous`."""
        async with self.store.transaction():
            return await self.store.outbox_recover(self._now())

    async def drain(self) -> int:
        """Send every due action this process takes once, oldest first; returns how many were
        sent. An action whose platform has no sender here, or that failed transiently, stays
        due; one whose record cannot be read fails."""
        sent = 0
        for key, write in list(self._unrecorded.items()):
            if not await self._record(key, write):
                return sent  # the ledger still cannot take it: nothing new goes out meanwhile
        for entry in await self.store.outbox_take(self.holder):
            try:
                action = from_record(entry.action)
            except StoreError as exc:
                log.error("outbox %s: failed: cannot be read: %s", entry.key, exc)
                await self._fail(entry, f"cannot be read: {exc}")
                continue
            action = await self._with_person(action)
            sender = self.senders.get(action.platform)
            if sender is None:
                continue
            if await self._attempt(entry, action, sender):
                sent += 1
        return sent

    async def _attempt(self, entry: OutboxEntry, action: Action, sender: Sender) -> bool:
        if entry.status == "ambiguous":
            try:
                found = await sender.find(action)
            except PermanentSendError as exc:
                log.error("outbox %s: failed: cannot check an earlier attempt: %s", entry.key, exc)
                await self._fail(entry, f"cannot check an earlier attempt: {exc}")
                return False
            except Exception as exc:
                # Not knowing whether it landed, it must not be sent: look again next round.
                log.warning("outbox %s: cannot check an earlier attempt yet: %s", entry.key, exc)
                return False
            if found is not None:
                await self._mark(entry.key, "sent", found)
                return True
        if not await self._taken(entry.key):
            return False
        try:
            result = await sender.send(action)
        except TransientSendError as exc:
            log.warning("outbox %s: will retry: %s", entry.key, exc)
            await self._mark(entry.key, "pending")
            return False
        except PermanentSendError as exc:
            log.error("outbox %s: failed: %s", entry.key, exc)
            await self._fail(entry, str(exc))
            return False
        except Exception as exc:
            log.error(
                "outbox %s: outcome unknown (%s); will check before resending", entry.key, exc
            )
            await self._mark(entry.key, "ambiguous")
            return False
        await self._mark(entry.key, "sent", result)
        return True

    async def _with_person(self, action: Action) -> Action:
        """A private post queued before the host named whom it is for (`Post.person`), by an
        older version: named now as the host names one (`core.guards.check_audience`), its
        first `user:` recipient, else the author of the message it answers."""
        if not isinstance(action, Post) or action.person is not None:
            return action
        if action.visibility not in ("dm", "ephemeral"):
            return action
        # The ledger is read only when no `user:` recipient names the person.
        person = private_person(action.mentions, None) or await self._author_of(action.in_reply_to)
        return replace(action, person=person)

    async def _author_of(self, event_id: str | None) -> str | None:
        """Who wrote the ledger's event `event_id`; None when it is not there or names nobody
        (the post then fails at its sender, saying so, and nothing else waits on it)."""
        entry = await entry_of(self.store, event_id) if event_id is not None else None
        author = entry.data.get("author") if entry is not None else None
        person = author.get("id") if isinstance(author, dict) else None
        return person if isinstance(person, str) else None

    async def _fail(self, entry: OutboxEntry, error: str) -> None:
        """Mark the entry failed for good, and keep that in the audit log for people."""
        error = self.clean(error)
        record = entry.action
        detail = {
            "key": entry.key,
            "action": record.get("action"),
            "conversation": record.get("conversation"),
            "error": error,
        }
        now = self._now()

        async def write() -> None:
            await self.store.outbox_mark(entry.key, "failed", now, {"error": error})
            await self.store.audit(entry.agent, "outbox", "failed", detail, now)

        await self._record(entry.key, write)

    async def _taken(self, key: str) -> bool:
        """Mark an attempt `sending` before it goes; False when the row is not due (any more),
        or the mark could not be made durable (the transaction it joined was rolled back, the
        database is away): then it must not go, and the next round tries again."""
        try:
            async with self.store.transaction():
                if await self.store.outbox_mark(key, "sending", self._now()):
                    return True
            log.info("outbox %s: not due any more (its queueing was rolled back)", key)
        except StoreError as exc:
            said = log.debug if during_outage(exc) else log.warning
            said("outbox %s: not sent this round: %s", key, exc)
        return False

    async def _mark(self, key: str, status: str, result: Mapping[str, Any] | None = None) -> None:
        """Record how an attempt ended."""
        now = self._now()

        async def write() -> None:
            await self.store.outbox_mark(key, status, now, result)

        await self._record(key, write)

    async def _record(self, key: str, write: Callable[[], Awaitable[None]]) -> bool:
        """Write an attempt's outcome in a transaction of its own (or the one open); one the
        ledger cannot take is kept for the next round, never lost. True once written."""
        try:
            async with self.store.transaction():
                await write()
        except Exception as exc:
            if key not in self._unrecorded:  # said once; an outage was said already
                said = log.debug if during_outage(exc) else log.warning
                said("outbox %s: its outcome is kept to be recorded: %s", key, exc)
            self._unrecorded[key] = write
            return False
        self._unrecorded.pop(key, None)
        return True

    def _now(self) -> str:
        return format_time(self.clock.now())
