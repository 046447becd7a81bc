"""Where a workspace's run sends what its engine emits: a queued action wakes the outbox, a
cancellation reaches the agent's connected harness and wakes it, a harness that went away
misses nothing (it resumes from the ledger), and agents with no harness are skipped."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from c2a import run_dispatch
from c2a.metrics import Metrics
from c2a.run_dispatch import Dispatch
from core.actions import Working
from core.emission import Cancel, Emission, Queued
from harness_bridge.backends.registry import Harness


class Told:
    """A deliverer that keeps what it is told, or fails like a harness that went away."""

    def __init__(self, gone: bool = False) -> None:
        self.gone = gone
        self.told: list[Emission] = []

    async def tell(self, emission: Emission) -> None:
        if self.gone:
            raise ConnectionError("the harness went away")
        self.told.append(emission)


class Woken:
    """A harness that counts its wake-ups."""

    def __init__(self, deliverer: Told | None = None) -> None:
        self.deliverer = deliverer
        self.wakes = 0

    async def run(self) -> None:
        return None

    def wake(self) -> None:
        self.wakes += 1


def dispatched(emissions: list[Emission], harnesses: dict[str, Harness]) -> int:
    """How often the outbox was woken by `emissions`."""
    woken: list[None] = []
    dispatch = Dispatch("ws", Metrics(), harnesses, lambda: woken.append(None))
    asyncio.run(dispatch(emissions))
    return len(woken)


def working(agent: str) -> Queued:
    return Queued(agent, Working(agent=agent, platform="toy", conversation="c", key="k", on=True))


def test_a_queued_action_wakes_the_outbox_and_not_the_harness() -> None:
    lead = Woken()
    assert dispatched([working("lead")], {"lead": lead}) == 1
    assert lead.wakes == 0


def test_a_cancellation_reaches_the_connected_harness_and_wakes_it() -> None:
    told, gone = Told(), Told(gone=True)
    lead, worker, idle = Woken(told), Woken(gone), Woken()
    cancels = [Cancel("lead", "e1", "deleted"), Cancel("worker", "e1", "deleted")]
    harnesses: dict[str, Harness] = {"lead": lead, "worker": worker, "idle": idle}
    assert dispatched([*cancels, Cancel("nobody", "e1", "deleted")], harnesses) == 0
    assert told.told == cancels[:1] and gone.told == []
    assert (lead.wakes, worker.wakes, idle.wakes) == (1, 1, 0)


def test_another_process_commit_wakes_the_outbox_or_the_agent_it_names() -> None:
    lead, worker = Woken(), Woken()
    woken: list[None] = []
    dispatch = Dispatch(
        "ws", Metrics(), {"lead": lead, "worker": worker}, lambda: woken.append(None)
    )
    dispatch.heard("deliveries lead")
    dispatch.heard("deliveries somebody-else")
    assert (lead.wakes, worker.wakes, len(woken)) == (1, 0, 0)
    dispatch.heard("outbox")
    assert (lead.wakes, worker.wakes, len(woken)) == (1, 0, 1)
    dispatch.heard("*")  # notifications were missed: everything looks again
    assert (lead.wakes, worker.wakes, len(woken)) == (2, 1, 2)


def test_decision_lines_are_built_only_when_they_are_logged(monkeypatch: Any) -> None:
    built: list[Emission] = []

    def fields(workspace: str, emission: Emission) -> dict[str, Any] | None:
        built.append(emission)
        return {"workspace": workspace, "agent": emission.agent, "action": "working"}

    monkeypatch.setattr(run_dispatch, "decision_fields", fields)
    monkeypatch.setattr(run_dispatch, "decision_text", lambda found: str(found["agent"]))
    lead = Woken()
    decisions = logging.getLogger("c2a.decisions")
    level = decisions.level
    try:
        decisions.setLevel(logging.WARNING)
        assert dispatched([working("lead")], {"lead": lead}) == 1  # still sent, not logged
        assert built == []
        decisions.setLevel(logging.INFO)
        assert dispatched([working("lead")], {"lead": lead}) == 1
        assert len(built) == 1
    finally:
        decisions.setLevel(level)


def test_the_decision_line_is_written_after_the_harness_is_woken(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="c2a.decisions")
    events: list[str] = []

    class Noting(Woken):
        def wake(self) -> None:
            events.append("woken")

    def fields(workspace: str, emission: Emission) -> dict[str, Any] | None:
        events.append("line")
        return {"workspace": workspace, "agent": emission.agent, "cancelled": "deleted"}

    monkeypatch.setattr(run_dispatch, "decision_fields", fields)

    async def run() -> None:
        dispatch = Dispatch("ws", Metrics(), {"lead": Noting(Told())}, lambda: None)
        await dispatch([Cancel("lead", "e1", "deleted")])
        assert events == ["woken"]  # the line waits for the next turn of the loop
        await asyncio.sleep(0)
        assert events == ["woken", "line"]

    asyncio.run(run())
