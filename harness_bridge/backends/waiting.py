"""A harness whose model is not there yet: it waits for the model's install, then builds the
real harness and runs it.

While it waits it takes no deliveries, so the agent's events stay `pending` in the ledger
(nothing is refused, answered or chased) and reach the real harness, oldest first, once it
runs. A failed install, or a harness that still cannot be built once it ended, is logged with
what to do and shown in `model_status`; the events still wait, for a later run.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from core.errors import C2AError
from harness_bridge.backends.local_install import Install
from harness_bridge.backends.model_status import DescribesModel, ModelStatus
from harness_bridge.backends.registry import Harness

__all__ = ["POLL_S", "WaitingHarness"]

log = logging.getLogger(__name__)

POLL_S: Final = 2.0


class WaitingHarness:
    """One agent's harness once `install` has installed what `build` needs. `describe` is
    the model as it will be, before it is (its state is filled in here)."""

    mailbox_in_memory = True  # the harness it becomes is built in (`InProcessHarness`)

    def __init__(
        self,
        agent: str,
        install: Install,
        build: Callable[[], Harness],
        describe: ModelStatus,
        *,
        binding: str | None = None,
        poll: float = POLL_S,
    ) -> None:
        self.agent = agent
        self.install = install
        self.build = build
        self.describe = describe
        self.binding = binding
        self.poll = poll
        self.inner: Harness | None = None
        self._failure = ""

    @property
    def deliverer(self) -> Any:
        """The running harness's deliverer, once there is one."""
        return getattr(self.inner, "deliverer", None)

    @property
    def results(self) -> list[Any]:
        """The running harness's latest finished turns (none while waiting)."""
        return list(getattr(self.inner, "results", ()))

    @property
    def outcomes(self) -> Mapping[str, int]:
        """The running harness's finished turns, counted by status (none while waiting)."""
        return dict(getattr(self.inner, "outcomes", {}))

    @property
    def running(self) -> int:
        """The running harness's turns running now (none while waiting)."""
        running = getattr(self.inner, "running", 0)
        return running if isinstance(running, int) else 0

    def model_status(self) -> ModelStatus:
        if isinstance(self.inner, DescribesModel):
            return self.inner.model_status()
        state = self.install.state()
        failure = self._failure or (self.install.failure() if state == "failed" else "")
        return ModelStatus(
            self.describe.model,
            self.describe.where,
            "failed" if failure else "building",
            since=self.install.started(),
            log=str(self.install.log),
            detail=failure,
            hint=self.describe.hint,
        )

    def wake(self) -> None:
        if self.inner is not None:
            self.inner.wake()

    async def run(self) -> None:
        """Wait for the install, build the harness, then run it until cancelled."""
        self.inner = await self._ready()
        log.info("%s: the model is ready; answering what waited", self.agent)
        await self.inner.run()

    async def _ready(self) -> Harness:
        log.info(
            "%s: waiting for the model to be installed (log: %s); its events stay pending",
            self.agent,
            self.install.log,
        )
        told = ""
        while True:
            state = self.install.state()
            if state == "installed":
                try:
                    return await self._build()
                except C2AError as exc:
                    self._failure = f"{exc}; its install log is {self.install.log}"
            elif state == "failed":
                self._failure = self.install.failure()
            else:
                self._failure = ""
            if self._failure and self._failure != told:
                log.error("%s: the model cannot run: %s", self.agent, self._failure)
            told = self._failure
            await asyncio.sleep(self.poll)

    async def _build(self) -> Harness:
        """The harness, its binding imported first in a thread (a native library loads)."""
        importlib.invalidate_caches()  # the install added packages since the finders looked
        if self.binding is not None:
            # A binding that does not load is named by the build, as one C2AError.
            with contextlib.suppress(Exception):
                await asyncio.to_thread(importlib.import_module, self.binding)
        return self.build()
