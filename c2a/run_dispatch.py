"""Where a workspace's run sends what its engine emits, once the ledger has committed it.

Every emission is counted for `/metrics`; then a `Queued` action wakes the outbox, a `Cancel`
or `Typing` goes straight to the agent's connected harness, and every agent told something has
its harness woken: a delivery is read back from the ledger by the deliverer it wakes, so none
is lost when a harness is away. Each decision is then logged as one line (`c2a.logs`), once the
woken have had their turn of the loop. Where several processes share a PostgreSQL ledger, what
another one committed wakes them the same way (`Dispatch.heard`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping

from c2a.logs import DECISIONS, decision_fields, decision_text
from c2a.metrics import Metrics
from core.emission import Cancel, Emission, Queued, Typing
from harness_bridge.backends.registry import Harness

__all__ = ["Dispatch"]


class Dispatch:
    """The host's sink for one workspace (`name`): its `metrics`, its agents' `harnesses` (by
    agent, filled in as they are built) and `wake_outbox`, which starts a sending round."""

    def __init__(
        self,
        name: str,
        metrics: Metrics,
        harnesses: Mapping[str, Harness],
        wake_outbox: Callable[[], None],
    ) -> None:
        self.name = name
        self.metrics = metrics
        self.harnesses = harnesses
        self.wake_outbox = wake_outbox

    async def __call__(self, emissions: list[Emission]) -> None:
        self.metrics.observe(self.name, emissions)
        woken: set[str] = set()
        for emission in emissions:
            match emission:
                case Queued():
                    self.wake_outbox()
                case Cancel() | Typing():
                    await self._notify(emission)
                    woken.add(emission.agent)
                case _:  # a delivery is read from the ledger by the deliverer it wakes
                    woken.add(emission.agent)
        for agent in woken:
            if agent in self.harnesses:
                self.harnesses[agent].wake()
        if DECISIONS.isEnabledFor(logging.INFO):  # else no line is built at all
            # Written once the woken have had their turn: a line never delays a delivery.
            asyncio.get_running_loop().call_soon(self._log, emissions)

    def _log(self, emissions: list[Emission]) -> None:
        """One line per decision (`c2a.logs`), in the order they were made."""
        for emission in emissions:
            fields = decision_fields(self.name, emission)
            if fields is not None:
                DECISIONS.info(decision_text(fields), extra={"decision": fields})

    def heard(self, payload: str) -> None:
        """Another process's commit left work (`core.postgres.listen`): `outbox`,
        `deliveries <agent>`, or `*` (notifications were missed: look at everything)."""
        kind, _, agent = payload.partition(" ")
        if kind in ("outbox", "*"):
            self.wake_outbox()
        for name, harness in self.harnesses.items():
            if kind == "*" or (kind == "deliveries" and name == agent):
                harness.wake()

    async def _notify(self, emission: Cancel | Typing) -> None:
        """Cancellations and typing go straight to a connected harness."""
        deliverer = getattr(self.harnesses.get(emission.agent), "deliverer", None)
        if deliverer is None:
            return
        with contextlib.suppress(Exception):  # a harness that went away resumes from the ledger
            await deliverer.tell(emission)
