"""An agent whose model is still being installed: while `make run`'s background install runs,
the `local` backend's harness waits, the agent's events stay pending in the ledger, and its
model says `building` with the log; once the install ends well the real harness is built and
answers what waited; a failed install, or a harness that still cannot be built, says so with
the log's path and keeps the events. The "model" here is a fake server, not a build."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from builders import local_workspace, slack_body, slack_message
from fakes.openai_server import FakeOpenAI, call, completion
from world import harness_context

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.engine import Engine
from core.errors import ManifestError
from core.sqlite_store import SQLiteStore
from harness_bridge.backends.local import BUNDLED_MODEL
from harness_bridge.backends.local_install import Install
from harness_bridge.backends.model_status import ModelStatus
from harness_bridge.backends.registry import Harness, build
from harness_bridge.backends.waiting import WaitingHarness

DM = "slack:T0LOCAL:D0LEAD:1767225601.000100"
BUNDLED = ModelStatus(BUNDLED_MODEL, "bundled, in process", hint="set C2A_MODEL_URL=...")


def building(tmp: Path, pid: int | None = None) -> Install:
    """An install in `tmp` whose process (this one, unless `pid`) is running."""
    install = Install(tmp / "local-install.log")
    install.log.write_text("compiling llama.cpp [12/180]\n")
    install.pid_file.write_text(f"{os.getpid() if pid is None else pid}\n")
    return install


def ended(install: Install, status: int) -> None:
    """The install ends with `status`, written as the Makefile writes it: whole, at once."""
    partial = install.exit_file.with_suffix(".tmp")
    partial.write_text(f"{status}\n")
    partial.replace(install.exit_file)


def world(test: Callable[[Engine, SQLiteStore], Awaitable[None]]) -> None:
    """The lead with one pending DM from a person, then `test`, within 20 seconds."""

    async def run() -> None:
        store = SQLiteStore(":memory:")
        await store.open()
        engine = Engine(local_workspace(), store, VirtualClock(parse_time("2026-01-01T00:00:10Z")))
        dm = slack_message("1767225601.000100", "is it green?", channel="D0LEAD", channel_type="im")
        async with store.transaction():
            event = normalise(slack_body(dm, via="lead"))
            assert event is not None
            await engine.ingest(event)
        async with asyncio.timeout(20):
            await test(engine, store)
        await store.close()

    asyncio.run(run())


async def status_of(store: SQLiteStore) -> tuple[str, str | None]:
    (delivery,) = await store.deliveries(DM)
    return delivery.status, delivery.disposition.value if delivery.disposition else None


async def until(test: Callable[[], Awaitable[bool]], what: str) -> None:
    try:
        async with asyncio.timeout(10):
            while not await test():
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def test_while_the_install_runs_the_local_backend_waits_and_says_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("C2A_MODEL_URL", raising=False)
    install = building(tmp_path)
    monkeypatch.setenv("C2A_MODEL_INSTALL", str(install.log))

    async def test(engine: Engine, store: SQLiteStore) -> None:
        harness = build(harness_context(engine, "lead"), {"backend": "local"})
        assert isinstance(harness, WaitingHarness)
        status = harness.model_status()
        assert (status.model, status.where, status.state) == (
            BUNDLED_MODEL,
            "bundled, in process",
            "building",
        )
        assert status.since == install.pid_file.stat().st_mtime
        assert status.log == str(install.log)
        assert "C2A_MODEL_URL=http://127.0.0.1:11434/v1" in status.hint

    world(test)


def test_turns_wait_for_the_model_then_what_waited_is_answered(tmp_path: Path) -> None:
    install = building(tmp_path)
    reply = {"target": {"conversation": "D0LEAD"}, "inReplyTo": DM, "text": "Green."}
    script = [completion(calls=[call("chat_send_message", reply)]), completion("done")]

    async def test(engine: Engine, store: SQLiteStore) -> None:
        async with FakeOpenAI(script) as server:

            def ready_harness() -> Harness:
                settings = {"backend": "openai", "base_url": server.base_url, "model": "m"}
                return build(harness_context(engine, "lead"), {**settings, "quiet_ms": 0})

            harness = WaitingHarness("lead", install, ready_harness, BUNDLED, poll=0.02)

            async def turn_ended() -> bool:  # its result recorded, then its task done
                return bool(harness.results) and harness.running == 0

            running = asyncio.create_task(harness.run())
            try:
                await asyncio.sleep(0.5)  # many polls: still building
                harness.wake()
                assert harness.model_status().state == "building"
                assert await status_of(store) == ("pending", None)
                assert server.requests == [] and not harness.results
                assert harness.outcomes == {} and harness.running == 0

                ended(install, 0)
                await until(
                    lambda: _answered(store), "the waiting DM to be answered once installed"
                )
                assert harness.model_status() == ModelStatus(
                    "m", f"the server at {server.base_url}"
                )
                # The reply is recorded before the turn's last model call ends the turn.
                await until(turn_ended, "the turn to end")
                assert [r.status for r in harness.results] == ["completed"]
                assert harness.outcomes == {"completed": 1} and harness.running == 0
            finally:
                running.cancel()
                await asyncio.gather(running, return_exceptions=True)

    world(test)


async def _answered(store: SQLiteStore) -> bool:
    return await status_of(store) == ("delivered", "responded")


def test_a_failed_install_says_so_with_its_log_and_keeps_the_events(tmp_path: Path) -> None:
    async def test(engine: Engine, store: SQLiteStore) -> None:
        failed = building(tmp_path / "a")
        ended(failed, 2)
        gone = subprocess.Popen(["true"])
        gone.wait()
        vanished = building(tmp_path / "b", pid=gone.pid)
        for install, why in [(failed, "ended with status 2"), (vanished, "stopped without")]:
            harness = WaitingHarness("lead", install, _unbuildable, BUNDLED, poll=0.02)
            running = asyncio.create_task(harness.run())
            await asyncio.sleep(0.2)
            status = harness.model_status()
            assert status.state == "failed"
            assert why in status.detail and str(install.log) in status.detail
            assert not running.done() and await status_of(store) == ("pending", None)
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    world(test)


def test_an_install_that_ended_but_cannot_build_the_model_says_why(tmp_path: Path) -> None:
    async def test(engine: Engine, store: SQLiteStore) -> None:
        install = building(tmp_path)
        ended(install, 0)
        harness = WaitingHarness("lead", install, _unbuildable, BUNDLED, poll=0.02)
        running = asyncio.create_task(harness.run())
        await asyncio.sleep(0.2)
        status = harness.model_status()
        assert status.state == "failed"
        assert status.detail == f"llama_cpp does not load (boom); its install log is {install.log}"
        assert not running.done() and await status_of(store) == ("pending", None)
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)

    world(test)


def _unbuildable() -> Harness:
    raise ManifestError("llama_cpp does not load (boom)")
