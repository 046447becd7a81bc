"""The loops a workspace's run keeps going: the outbox's sending rounds, the engine's sweep,
and each harness, started again when it dies.

A loop that must go on catches whatever one round raises, logs it and goes on; only
cancellation (or, for the outbox, `stop` then `finish`) ends it. They log as `c2a.run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from core.emission import Emission
from core.engine import Engine
from core.outbox import Outbox
from core.postgres.outage import during_outage
from harness_bridge.backends.registry import Harness

__all__ = ["OUTBOX_EVERY", "RESTART_AFTER", "SWEEP_EVERY", "OutboxLoop", "supervise", "sweep"]

log = logging.getLogger("c2a.run")

OUTBOX_EVERY = 0.25  # retries; a queued action is sent as soon as its commit rings (QueueBell)
SWEEP_EVERY = 5.0
RESTART_AFTER = 5.0


class OutboxLoop:
    """The sending rounds of one workspace's outbox (`name` in its logs), as a task: a round as
    soon as a queued action's commit rings (`core.outbox.QueueBell`) or `wake` is called, else
    every `OUTBOX_EVERY` seconds for retries (`Outbox.run`)."""

    def __init__(self, name: str, outbox: Outbox) -> None:
        self.name = name
        self.outbox = outbox
        self.task: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        rounds = self.outbox.run(OUTBOX_EVERY, lambda: self._stopping, self.name)
        self.task = asyncio.create_task(rounds, name=f"outbox-{self.name}")

    def wake(self) -> None:
        """Something is due: send it now rather than at the next tick."""
        self.outbox.wake()

    def stop(self) -> None:
        """No round after the one running (or the one `finish` asks for)."""
        self._stopping = True

    async def finish(self, grace: float) -> None:
        """One last round of what is due, bounded by `grace` seconds; then the loop stops."""
        task = self.task
        if task is None:
            return
        self.stop()
        self.outbox.wake()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), grace)
        if not task.done():
            log.warning(
                "%s: the outbox did not finish in %.0f s; the rest is sent on the next start",
                self.name,
                grace,
            )
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def sweep(
    name: str,
    engine: Engine,
    sink: Callable[[list[Emission]], Awaitable[None]],
) -> None:
    """Every `SWEEP_EVERY` seconds, and at once when an agent goes down or comes back
    (`core.availability.Unavailable.changed`), the engine's follow-ups, committed, then given
    to `sink`."""
    while True:
        changed = engine.unavailable.changed
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), SWEEP_EVERY)
        changed.clear()
        try:
            async with engine.transaction():
                emissions = await engine.sweep()
            if emissions:
                await sink(emissions)
        except Exception as exc:
            said = log.debug if during_outage(exc) else log.error  # said once already
            said("%s: sweep failed: %s", name, exc)


async def supervise(name: str, agent: str, harness: Harness, engine: Engine) -> None:
    """Run a harness; if it dies, mark the agent unavailable and start it again."""
    while True:
        try:
            await harness.run()
            return
        except Exception as exc:
            log.warning(
                "%s: harness of %s stopped (%s); restarting in %.0f s",
                name,
                agent,
                str(exc) or type(exc).__name__,
                RESTART_AFTER,
            )
            engine.mark_unavailable(agent)
        await asyncio.sleep(RESTART_AFTER)
        engine.mark_available(agent)
