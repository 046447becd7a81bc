"""The loops a workspace's run keeps going: the outbox's sending rounds, the engine's sweep,
the retention's pruning, and each harness, started again when it dies.

A loop that must go on catches whatever one round raises, logs it and goes on; only
cancellation (or, for the outbox, `stop` then `finish`) ends it. They log as `c2a.run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime

from core.clock import Clock
from core.emission import Emission
from core.engine import Engine
from core.outbox import Outbox
from core.platform import Connection, KeepsRecord
from core.postgres.outage import during_outage
from core.retention import RetentionSetting, counted, prune, prune_before
from core.store import Retention
from harness_bridge.backends.registry import Harness

__all__ = [
    "OUTBOX_EVERY",
    "PRUNE_EVERY",
    "RESTART_AFTER",
    "SWEEP_EVERY",
    "SWEEP_MOST_EVERY",
    "OutboxLoop",
    "pruned_everywhere",
    "retain",
    "supervise",
    "sweep",
    "sweep_delay",
]

log = logging.getLogger("c2a.run")

OUTBOX_EVERY = 0.25  # retries; a queued action is sent as soon as its commit rings (QueueBell)
SWEEP_EVERY = 5.0
SWEEP_MOST_EVERY = 300.0  # the longest wait after sweeps that failed on something not an outage
RESTART_AFTER = 5.0
PRUNE_EVERY = 3600.0


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
    pause: Callable[[asyncio.Event, float], Awaitable[None]] | None = None,
) -> None:
    """Every `SWEEP_EVERY` seconds, and at once when an agent goes down or comes back
    (`core.availability.Unavailable.changed`), the engine's follow-ups, committed, then given
    to `sink`. A sweep that fails leaves the engine's memory to be folded again from the
    ledger at the next event (`Engine.transaction`), the whole ledger: after sweeps that fail
    on something other than a database outage (a bug, a bad record) the wait doubles, up to
    `SWEEP_MOST_EVERY` (`sweep_delay`), so that a sweep failing each time cannot have every
    event wait for that fold. `pause` waits for `changed` or the seconds given (a test's
    stand-in for the clock)."""
    wait = pause or _pause
    failures = 0
    while True:
        changed = engine.unavailable.changed
        await wait(changed, sweep_delay(failures))
        changed.clear()
        try:
            async with engine.transaction():
                emissions = await engine.sweep()
            failures = 0
            if emissions:
                await sink(emissions)
        except Exception as exc:
            if during_outage(exc):
                log.debug("%s: sweep failed: %s", name, exc)  # the outage is said once already
                continue
            failures += 1
            log.error("%s: sweep failed: %s (next in %.0f s)", name, exc, sweep_delay(failures))


async def retain(
    name: str,
    store: Retention,
    clock: Clock,
    setting: Callable[[], RetentionSetting | None],
    pruned: Callable[[datetime], Awaitable[Mapping[str, int]]],
    wait: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """At the start and every `PRUNE_EVERY` seconds (`wait`), drop what the workspace's
    retention (`setting`, read each time: a reload may change it) has outlived, and tell
    `pruned` how far (it says what else went); nothing while it has none. A round that fails
    is logged and the next one tries again."""
    while True:
        kept = setting()
        if kept is not None:
            before = prune_before(clock.now(), kept)
            try:
                dropped = await prune(store, before)
                dropped.update(await pruned(before))
            except Exception as exc:
                level = logging.DEBUG if during_outage(exc) else logging.ERROR
                log.log(level, "%s: pruning failed: %s", name, exc)
            else:
                if any(dropped.values()):
                    log.info(
                        "%s: pruned what is older than %d days: %s",
                        name,
                        kept.days,
                        counted(dropped),
                    )
        await wait(PRUNE_EVERY)


def pruned_everywhere(
    engine: Engine, connections: Mapping[str, Connection]
) -> Callable[[datetime], Awaitable[dict[str, int]]]:
    """`retain`'s `pruned`: the engine learns how far retention went, and each platform that is
    itself the record of what was said (`KeepsRecord`, the web chat) drops the same; it says
    how many of their messages went, by platform."""

    async def pruned(before: datetime) -> dict[str, int]:
        engine.note_pruned(before)
        return {
            f"{name} messages": await connection.forget(before)
            for name, connection in connections.items()
            if isinstance(connection, KeepsRecord)
        }

    return pruned


def sweep_delay(failures: int) -> float:
    """Seconds to the next sweep after `failures` failed ones in a row (outages not counted):
    `SWEEP_EVERY`, doubled for each, at most `SWEEP_MOST_EVERY`."""
    return min(SWEEP_EVERY * (1 << min(failures, 16)), SWEEP_MOST_EVERY)


async def _pause(changed: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(changed.wait(), seconds)


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
