"""The host's end of delivery: send each agent's pending events to its harness, in order, and
record each acknowledgement; retry with the same event id and key and a higher `attempt`.

An event counts as delivered only when the harness answers its `chat/deliver` request. Whatever
is still pending when a harness dies is sent again, from the oldest, when it comes back.
Notifications (a cancellation, typing) go through `notify`, which waits a bounded time: the host
sends them from its receive path, which a harness that stops reading must not hold up.

The deliverer asks the host only through `core.deliveries.DeliveryPort`: which deliveries are
pending, the typed `Delivery` of each, and the bookkeeping of each attempt. The message a
harness reads is built from that value here, once per send (`harness_bridge.envelope`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from core.deliveries import DeliveryPort
from core.emission import Cancel, Typing
from core.store import StoredDelivery
from harness_bridge.envelope import deliver_request, notification
from harness_bridge.rpc import Connection, Params, RpcError
from harness_bridge.session import Session
from harness_bridge.wire import METHOD_DELIVER

__all__ = ["NOTIFY_TIMEOUT", "Deliverer"]

log = logging.getLogger(__name__)

NOTIFY_TIMEOUT = 2.0  # seconds a notification may take to reach a harness before it is dropped


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
    ) -> None:
        self.agent = agent
        self.deliveries = deliveries
        self.connection = connection
        self.session = session
        self.timeout = timeout
        self.notify_timeout = notify_timeout
        self.attempts = attempts
        self.backoff = backoff
        self.sent: list[str] = []

    async def resume(self) -> int:
        """Send every pending delivery of this agent, oldest first; returns how many were
        acknowledged. Stops (raising `Closed`) when the harness goes away; what is left stays
        pending for the next `resume`."""
        done = 0
        while batch := await self.deliveries.pending(self.agent):
            for delivery in batch:
                await self.send(delivery)
                done += 1
        return done

    async def send(self, delivery: StoredDelivery) -> None:
        """Deliver one event until acknowledged: a timeout is retried with backoff; a refusal
        (the harness says the request is invalid) is final and recorded as `failed`."""
        port = self.deliveries
        decision = delivery.decision
        stored = replace(
            delivery, decision=replace(decision, mode=self.session.mode_for(decision.mode))
        )
        attempt = delivery.attempt
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=self.backoff, max=30),
            retry=retry_if_exception_type(TimeoutError),
            reraise=True,
        )
        try:
            async for trial in retrying:
                with trial:
                    attempt += 1
                    await port.note_attempt(stored, attempt)
                    told = await port.delivery(stored)
                    message = deliver_request(told, compact=self.session.compact, attempt=attempt)
                    self.sent.append(decision.event_id)
                    await self.connection.request(
                        METHOD_DELIVER,
                        message["params"],
                        request_id=message["id"],
                        timeout=self.timeout,
                    )
        except RpcError as exc:
            await port.failed(stored, f"refused by the harness: {exc.message}")
            return
        await port.delivered(stored, attempt)

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
