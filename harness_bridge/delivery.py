"""The host's end of delivery: send each agent's pending events to its harness, in ledger
order, with up to `window` requests in flight, and record each acknowledgement as it comes.

An event counts as delivered only when the harness answers its `chat/deliver` request; the
answers may come in any order, and those that come together are recorded in one transaction
(`DeliveryPort.settle`), as the attempts written together are noted in one before they go
(`DeliveryPort.next_attempts`: nothing to note for the first attempt of a delivery the host
decided, which the ledger reserved when it recorded the decision).
Requests are written in ledger order by one loop, so the harness reads them in that order.
A pass reads what is pending when it starts, and again only when the read was a full page
(`PENDING_PAGE`) or the deliverer was woken since (`wake`: the host recorded a delivery for this
agent after the read), so a lone delivery costs one read.
When one delivery goes wrong, the others in the window are not lost or reordered:

- **refused** (the harness answers with an error): that delivery is final, recorded `failed`;
  the window goes on.
- **timed out, or the harness is busy**: the window stops taking new deliveries, lets those in
  flight finish (their answers are recorded), waits a backoff that doubles, then goes back to
  the oldest unacknowledged delivery and sends from there again, each with a higher `attempt`
  and the same event id and key. A delivery that times out `attempts` times raises
  `TimeoutError`, for the backend to restart the harness.
- **the harness goes away** (`Closed`): the answers it wrote before it went are still read and
  recorded (a write to it can fail before the acknowledgements already in the pipe are read);
  what it never answered stays pending, and the next `resume` sends everything
  unacknowledged, from the oldest, with a higher `attempt`.

The happy path tries once: no retry machinery runs until something fails.
Notifications (a cancellation, typing) go through `notify`, which waits a bounded time: the host
sends them from its receive path, which a harness that stops reading must not hold up.

The deliverer asks the host only through `core.deliveries.DeliveryPort`: which deliveries are
pending, the typed `Delivery` of each, and the bookkeeping of each attempt. The message a
harness reads is built from that value here, once per send (`harness_bridge.envelope`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import replace
from typing import Any

from core.decision import InjectionMode
from core.deliveries import PENDING_PAGE, DeliveryPort, Settled
from core.emission import Cancel, Typing
from core.store import StoredDelivery
from harness_bridge.envelope import deliver_request, notification
from harness_bridge.rpc import SERVER_BUSY, Connection, Params, RpcError
from harness_bridge.session import Session
from harness_bridge.transport import Closed
from harness_bridge.wire import METHOD_DELIVER

__all__ = ["DELIVERY_WINDOW", "NOTIFY_TIMEOUT", "Deliverer"]

log = logging.getLogger(__name__)

NOTIFY_TIMEOUT = 2.0  # seconds a notification may take to reach a harness before it is dropped
DELIVERY_WINDOW = 32  # `chat/deliver` requests in flight per agent, by default
SENT_KEPT = 1024  # the newest event ids written to the harness, for a look at what went
MAX_BACKOFF = 30.0  # seconds, the longest wait before going back after a timeout


class Deliverer:
    """Delivers one agent's events over one harness connection."""

    def __init__(
        self,
        agent: str,
        deliveries: DeliveryPort,
        connection: Connection,
        session: Session,
        *,
        timeout: float = 10.0,
        notify_timeout: float = NOTIFY_TIMEOUT,
        attempts: int = 5,
        backoff: float = 0.5,
        window: int = DELIVERY_WINDOW,
        woken: asyncio.Event | None = None,
    ) -> None:
        """`woken` is set when deliveries are recorded for the agent (`wake` sets it too): a
        harness that outlives its deliverers keeps one for all of them."""
        if window < 1:
            raise ValueError(f"a delivery window holds at least one request, not {window}")
        self.agent = agent
        self.deliveries = deliveries
        self.connection = connection
        self.session = session
        self.timeout = timeout
        self.notify_timeout = notify_timeout
        self.attempts = attempts
        self.backoff = backoff
        self.window = window
        self.sent: deque[str] = deque(maxlen=SENT_KEPT)
        self._woken = woken if woken is not None else asyncio.Event()

    def wake(self) -> None:
        """Deliveries were recorded for this agent: the pass under way reads them, or the
        next one (`serve`)."""
        self._woken.set()

    async def serve(self) -> None:
        """Deliver until cancelled: a pass (`resume`), then another each time deliveries were
        recorded since the last read of what is pending. Raises what `resume` raises."""
        while True:
            await self.resume()
            await self._woken.wait()

    async def resume(self) -> int:
        """Send every pending delivery of this agent, oldest first; returns how many were
        acknowledged. Stops (raising `Closed`) when the harness goes away; what is left stays
        pending for the next `resume`."""
        acked = 0
        stalls: dict[str, int] = {}  # idempotency key -> times it timed out
        while True:
            settled, stalled = await self._pass()
            acked += settled
            if not stalled:
                return acked
            for key in stalled:
                stalls[key] = stalls.get(key, 0) + 1
            worst = max(stalls[key] for key in stalled)
            if worst >= self.attempts:
                raise TimeoutError(
                    f"the harness of {self.agent} did not acknowledge a delivery "
                    f"in {worst} attempts"
                )
            await asyncio.sleep(min(self.backoff * 2 ** (worst - 1), MAX_BACKOFF))

    async def _pass(self) -> tuple[int, list[str]]:
        """Send what is pending through the window until nothing is left, or until a delivery
        stalls and those in flight have finished; returns the acknowledged count and the keys
        of the stalled deliveries."""
        flying: dict[asyncio.Task[Settled | None], str] = {}
        settled = 0
        stalled: list[str] = []

        async def land(first: bool) -> None:
            nonlocal settled
            mode = asyncio.FIRST_COMPLETED if first else asyncio.ALL_COMPLETED
            done, _ = await asyncio.wait(flying, return_when=mode)
            landed = {task: key for task, key in flying.items() if task in done}  # sent order
            for task in landed:
                del flying[task]
            ended = await self._record(list(landed))
            stalled.extend(key for task, key in landed.items() if task.result() is None)
            settled += len(ended)

        woken = self._woken
        try:
            while not stalled:
                woken.clear()  # a delivery recorded after this read wakes the pass again
                keys = set(flying.values())
                read = await self.deliveries.pending(self.agent)
                more = len(read) >= PENDING_PAGE  # a full page: more may wait behind it
                batch = [s for s in read if s.decision.idempotency_key not in keys]
                fresh = bool(batch)
                while batch:
                    while len(flying) >= self.window and not stalled:
                        await land(first=True)
                    if stalled:
                        break
                    room = self.window - len(flying)
                    await self._send(batch[:room], flying)
                    del batch[:room]
                if more and fresh:
                    continue  # the next page, at once
                while flying and not stalled and not woken.is_set():
                    await land(first=True)
                    if more:
                        break  # a page all in flight: read again once one has landed
                if not (more or woken.is_set()):
                    break
            if flying:
                await land(first=False)
        except Closed:
            if flying:  # answers already written settle; the rest fail as the pipe ends
                done, _ = await asyncio.wait(flying, timeout=self.timeout)
                await self._record([task for task in flying if task in done])
            raise
        finally:
            for task in flying:
                task.cancel()
            await asyncio.gather(*flying, return_exceptions=True)
        return settled, stalled

    async def _send(
        self, chunk: list[StoredDelivery], flying: dict[asyncio.Task[Settled | None], str]
    ) -> None:
        """Make the chunk's next attempts durable, then write each delivery, in the mode this
        harness accepts; a task awaiting each one's answer is put in `flying`."""
        port = self.deliveries
        mode_for = self.session.mode_for
        chunk = [_in_mode(d, mode_for(d.decision.mode)) for d in chunk]
        for stored, attempt in zip(chunk, await port.next_attempts(chunk), strict=True):
            told = await port.delivery(stored)
            message = deliver_request(told, compact=self.session.compact, attempt=attempt)
            decision = stored.decision
            self.sent.append(decision.event_id)
            answer = await self.connection.send_request(
                METHOD_DELIVER, message["params"], request_id=message["id"]
            )
            task = asyncio.create_task(self._settle(answer, stored, attempt))
            flying[task] = decision.idempotency_key

    async def _settle(
        self, answer: asyncio.Future[Any], stored: StoredDelivery, attempt: int
    ) -> Settled | None:
        """Wait for one answer: how the attempt ended (acknowledged, or refused: final), or None
        when it timed out or the harness was busy (still pending)."""
        try:
            await asyncio.wait_for(answer, self.timeout)
        except TimeoutError:
            return None
        except RpcError as exc:
            if exc.rpc_code == SERVER_BUSY:
                return None
            return Settled(stored, attempt, f"refused by the harness: {exc.message}")
        return Settled(stored, attempt)

    async def _record(self, done: list[asyncio.Task[Settled | None]]) -> list[Settled]:
        """Record the attempts these tasks saw end, in one transaction, in the order given;
        then raise what one of them raised, if any (the others are recorded first)."""
        answered = [t.result() for t in done if not t.cancelled() and t.exception() is None]
        ended = [outcome for outcome in answered if outcome is not None]
        if ended:
            await self.deliveries.settle(ended)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                task.result()
        return ended

    async def tell(self, emission: Cancel | Typing) -> None:
        """Send a cancellation or a typing hint (see `notify`)."""
        await self.notify(*notification(emission))

    async def notify(self, method: str, params: Params) -> None:
        """Send a notification, giving up (logged) when the harness has not taken it within
        `notify_timeout`. Nothing is lost that matters: a dropped cancellation or typing hint
        only leaves the harness with what the ledger already says."""
        try:
            async with asyncio.timeout(self.notify_timeout):
                await self.connection.notify(method, params)
        except TimeoutError:
            log.warning(
                "agent %s: the harness did not take %s within %.1f s; not sent",
                self.agent,
                method,
                self.notify_timeout,
            )


def _in_mode(stored: StoredDelivery, mode: InjectionMode) -> StoredDelivery:
    """The delivery sent in `mode` (the one its harness accepts); itself when that is its own."""
    if stored.decision.mode is mode:
        return stored
    return replace(stored, decision=replace(stored.decision, mode=mode))
