"""`c2a run`: the composition root that runs one or more workspaces live in one process.

For each workspace manifest it opens its ledger (`core.store_choice`: PostgreSQL when the
manifest or `$C2A_DATABASE_URL` names it, else SQLite in `<data_dir>/<workspace>.sqlite3`), a
`Host`, every agent's harness backend, the connection of every installed platform the
workspace uses (`c2a.platforms`; each platform's `connect` decides from the manifest), the
senders feeding an outbox loop, and the engine's sweep loop (the loops: `c2a.run_loops`; where
each emission goes: `c2a.run_dispatch`). Each agent's harness is built from a port made here
from the engine (`harness_bridge.backends.registry.HarnessContext`). Everything that a person
can get wrong (a wrong manifest key, an unset token variable, a harness nobody answers for) is
checked before anything connects and raised as one `C2AError` line. A SIGHUP reads every
manifest again and takes it live (`c2a.reload`).

Shutdown, when `stop` is set: platform connections close first (no new events), the outbox
gets `outbox_grace` seconds to send what is due, harnesses get `harness_grace` seconds to stop,
the connections release what sending needed, and the ledgers close last. Nothing acknowledged
is lost: it is in the ledger, and pending deliveries and due sends resume on the next start;
how each platform catches up on what was said in between is its adapter's (its `plugin.py`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

from c2a import gc_tuning
from c2a.host import Host
from c2a.ledger_lock import LedgerLock
from c2a.logs import redact_logs
from c2a.metric_reads import leases_read, running_read, turns_read, unavailable_read
from c2a.metrics import CountedSenders, CountedStore, Metrics, serve_metrics
from c2a.platforms import installed
from c2a.probes import HarnessUnreachable, probe_harnesses
from c2a.reload import Gate, watch_reloads
from c2a.run_dispatch import Dispatch
from c2a.run_inputs import load_workspaces, private_directory
from c2a.run_leases import harness_leases, holder_name
from c2a.run_loops import OutboxLoop, pruned_everywhere, retain, supervise, sweep
from c2a.run_report import health, say_ready, say_restarted, say_started
from core.clock import SystemClock
from core.emission import Outcome
from core.engine_port import EnginePort
from core.manifest import AgentConfig, Workspace
from core.outbox import Outbox, QueueBell, Sender
from core.platform import Connection, Platform, RunContext
from core.redact import Redactor
from core.restart import blocked_again, finish_cut_replies, tell_again
from core.sqlite_store import SQLiteStore
from core.store_choice import open_store, store_url
from harness_bridge.backends.model_status import views as model_views
from harness_bridge.backends.registry import Harness, HarnessContext, MailboxInMemory, build

__all__ = ["HarnessUnreachable", "WorkspaceRun", "load_workspaces", "run_workspaces"]

log = logging.getLogger("c2a.run")

DEFAULT_DATA_DIR = ".c2a"


class WorkspaceRun:
    """One workspace's ledger, host, harnesses, connections and loops."""

    def __init__(
        self,
        workspace: Workspace,
        data_dir: Path,
        environ: Mapping[str, str],
        metrics: Metrics | None = None,
        webchat_port: int | None = None,
        platforms: Mapping[str, Platform] | None = None,
    ) -> None:
        """`platforms` defaults to the installed ones (`c2a.platforms`)."""
        self.platforms = installed() if platforms is None else platforms
        self.workspace = workspace
        self.data_dir = data_dir
        self.webchat_port = webchat_port
        self.metrics = metrics or Metrics()
        self.name = workspace.manifest.workspace
        self.environ = environ
        self.clock = SystemClock()
        url = store_url(workspace.manifest.store, environ)
        sqlite_file = str(data_dir / f"{self.name}.sqlite3")
        self.ledger_file = "" if url else sqlite_file  # "": not a SQLite file (PostgreSQL)
        ledger = open_store(url, sqlite_file, schema=self.name)
        # On SQLite one process owns the ledger: a second `c2a run` on it is refused.
        self.ledger_lock = LedgerLock(ledger.path) if isinstance(ledger, SQLiteStore) else None
        self.store = QueueBell(CountedStore(ledger, self.metrics, self.name))
        self.redactor = Redactor.for_manifest(workspace.manifest, environ, workspace.secrets)
        redact_logs(self.redactor)
        self.harnesses: dict[str, Harness] = {}
        self.senders: dict[str, Sender] = {}
        self.holder = holder_name()
        counted = CountedSenders(self.senders, self.metrics, self.name)
        self.outbox = Outbox(
            self.store,
            self.clock,
            counted,
            due=self.store.due,
            holder=self.holder,
            clean=self.redactor.text,
        )
        self.outbox_loop = OutboxLoop(self.name, self.outbox)
        self.dispatch = Dispatch(self.name, self.metrics, self.harnesses, self.outbox_loop.wake)
        self.host = Host(
            workspace,
            self.store,
            self.clock,
            self.dispatch,
            self.redactor,
            platforms=self.platforms,
        )
        self.store.gauges(lambda: self.workspace.agent_ids, self.clock.now)
        self.metrics.read(
            "c2a_model_turns_total", turns_read(self.name, self.harnesses), kind="counter"
        )
        self.metrics.read("c2a_model_turns_running", running_read(self.name, self.harnesses))
        down = unavailable_read(
            self.name, lambda: self.workspace.agent_ids, self.host.engine.unavailable
        )
        self.metrics.read("c2a_agent_unavailable", down)
        self.connections: dict[str, Connection] = {}
        self.gate = Gate()
        self.harness_tasks: dict[str, asyncio.Task[None]] = {}
        self.unanswered: frozenset[str] = frozenset()  # agents the manifest gives no harness
        self._loops: list[asyncio.Task[None]] = []
        # None unless several processes may share the ledger
        self.leases = harness_leases(url, self.holder, self, self.dispatch.heard)
        if self.leases is not None:
            held = leases_read(self.name, self.holder, self.leases.names)
            self.metrics.read("c2a_leases_held", held)

    # -- before anything connects

    def prepare(self) -> None:
        """Build what needs no network and check every setting; raises C2AError."""
        for agent, config in self.workspace.manifest.agents.items():
            if config.harness is not None:
                self.harnesses[agent] = self.build_harness(agent, config.harness.settings())
        context = self.context(self.workspace, self.redactor)
        for name, platform in self.platforms.items():
            connection = platform.connect(context) if platform.connect else None
            if connection is not None:
                self.connections[name] = connection
                self.take_sender(name, connection)

    def build_harness(self, agent: str, settings: Mapping[str, Any]) -> Harness:
        """`agent`'s harness, on a port of this run's engine; raises C2AError."""
        streaming = frozenset(n for n, p in self.platforms.items() if p.streams_drafts)
        limits = {n: p.draft_limit for n, p in self.platforms.items() if p.draft_limit}
        port = EnginePort(self.host.engine, agent, self.senders, limits, self.dispatch)
        deliveries = self.host.engine.deliveries
        context = HarnessContext(
            port,
            deliveries,
            streaming,
            limits,
            manifest=self.workspace.source,
            ledger=self.ledger_file,
            environ=self.environ,
            files=str(self.data_dir / self.name),
        )
        return build(context, dict(settings))

    def context(self, workspace: Workspace, redactor: Redactor) -> RunContext:
        return RunContext(  # what a platform's `connect` is given
            workspace=workspace,
            engine=self.host.engine,
            store=self.store,
            clock=self.clock,
            receive=self.receive,
            environ=self.environ,
            redactor=redactor,
            data_dir=self.data_dir,
            options={
                "webchat_port": self.webchat_port,
                "models": self.models,
                "leases": self.leases,  # None unless several processes share the ledger
            },
            sink=self.dispatch,
        )

    def take_sender(self, name: str, connection: Connection) -> None:
        sender = connection.sender
        if sender is not None:
            self.senders[name] = sender

    def models(self) -> dict[str, dict[str, Any]]:
        """Which model answers each agent, whether it is ready, down, or none at all."""
        return model_views(self.harnesses, self.unanswered, self.host.engine.unavailable)

    def note_unanswered(self) -> None:
        """Agents the manifest gives no harness are down for as long as that lasts: nothing
        would ever answer them, so their questions get `blocked` instead of `seen` and the
        people waiting the notice, as when a harness is down. One given a harness since is up
        until its harness says otherwise. Called at the start and after each reload."""
        engine = self.host.engine
        unanswered = frozenset(a for a in self.workspace.agent_ids if a not in self.harnesses)
        for agent in self.unanswered - unanswered:
            engine.mark_available(agent)
        for agent in sorted(unanswered):
            engine.mark_unavailable(agent)
        self.unanswered = unanswered

    async def probe_harnesses(self, agents: Mapping[str, AgentConfig] | None = None) -> None:
        """Fail fast, saying what to do, when a harness (of `agents`, else all) cannot run."""
        await probe_harnesses(self.workspace.manifest.agents if agents is None else agents)

    # -- running

    async def start(self) -> None:
        """Open the ledger, start harnesses and loops, then connect the platforms."""
        if self.ledger_lock is not None:
            self.ledger_lock.take()
        await self.host.start()
        await self.outbox.recover()
        if not self.store.shared:  # else another process may be writing the reply
            built_in = [a for a, h in self.harnesses.items() if isinstance(h, MailboxInMemory)]
            async with self.host.engine.transaction():
                cut = await finish_cut_replies(self.host.engine)
                told = await tell_again(self.host.engine, built_in)
                await blocked_again(self.host.engine)
            say_restarted(self.name, cut, told)
        for agent, harness in self.harnesses.items():
            self.start_harness(agent, harness)
        self.note_unanswered()
        if self.leases is not None:
            await self.leases.begin()
            self._loops.append(asyncio.create_task(self.leases.run(), name=f"leases-{self.name}"))
        self.outbox_loop.start()
        swept = sweep(self.name, self.host.engine, self.dispatch)
        self._loops.append(asyncio.create_task(swept, name=f"sweep-{self.name}"))
        kept = retain(
            self.name,
            self.store,
            self.clock,
            lambda: self.workspace.manifest.retention,  # as the last reload left it
            pruned_everywhere(self.host.engine, self.connections),
        )
        self._loops.append(asyncio.create_task(kept, name=f"retention-{self.name}"))
        for name, connection in self.connections.items():
            await connection.start()
            self.take_sender(name, connection)
        say_started(
            self.name,
            agents=len(self.workspace.manifest.agents),
            harnesses=len(self.harnesses),
            platforms=list(self.senders),
            models=self.models(),
            unanswered=self.unanswered,
        )
        for connection in self.connections.values():
            say_ready(self.name, connection.ready())

    async def close_connections(self) -> None:
        """Stop taking events: every platform connection closes."""
        self.outbox_loop.stop()
        for connection in self.connections.values():
            await connection.close()

    async def finish_outbox(self, grace: float) -> None:
        """One last drain of what is due, bounded by `grace` seconds; then the loop stops."""
        await self.outbox_loop.finish(grace)

    def start_harness(self, agent: str, harness: Harness) -> None:
        """Run `agent`'s harness, started again whenever it dies; with leases, only while this
        process holds the agent's (else `leases` starts it once it does)."""
        self.harnesses[agent] = harness
        if self.leases is None or agent in self.leases.held:
            self.run_harness(agent)

    def run_harness(self, agent: str) -> None:
        supervised = supervise(self.name, agent, self.harnesses[agent], self.host.engine)
        self.harness_tasks[agent] = asyncio.create_task(supervised, name=f"harness-{agent}")

    async def halt_harness(self, agent: str) -> None:
        """Stop `agent`'s harness (its lease is lost); what it is owed stays in the ledger."""
        task = self.harness_tasks.pop(agent, None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def stop_harnesses(self, grace: float) -> None:
        tasks = [*self.harness_tasks.values(), *self._loops]
        for task in tasks:
            task.cancel()
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        if pending:
            log.warning(
                "%s: %d harness task(s) did not stop in %.0f s", self.name, len(pending), grace
            )

    async def close(self) -> None:
        for connection in self.connections.values():
            await connection.finish()
        if self.leases is not None:
            await self.leases.end()
        await self.host.close()
        if self.ledger_lock is not None:
            self.ledger_lock.release()

    # -- what the platforms call

    async def receive(
        self, platform: str, payload: Mapping[str, Any], via: str | None = None
    ) -> Outcome | None:
        """The host's receive, counted for `/metrics`; it waits while a reload changes the
        engine."""
        async with self.gate.passing():
            outcome = await self.host.receive(platform, payload, via)
        if outcome is not None and outcome.status == "new":
            self.metrics.count("c2a_events_total", workspace=self.name, platform=platform)
        return outcome


# ---- many workspaces -----------------------------------------------------------------------


async def run_workspaces(
    manifests: Sequence[str | Path],
    *,
    stop: asyncio.Event,
    environ: Mapping[str, str] | None = None,
    data_dir: str | Path = DEFAULT_DATA_DIR,
    outbox_grace: float = 10.0,
    harness_grace: float = 5.0,
    started: Callable[[list[WorkspaceRun]], Awaitable[None] | None] | None = None,
    metrics_port: int | None = None,
    webchat_port: int | None = None,
    reload: asyncio.Event | None = None,
) -> None:
    """Run every workspace until `stop` is set, then shut down in order; each time `reload` is
    set, read every manifest again (`c2a.reload`). Raises C2AError (one line for a person) when
    a manifest, a token variable or a harness is wrong at the start; in that case nothing is
    left running."""
    env = os.environ if environ is None else environ
    directory = Path(data_dir)
    metrics = Metrics()
    platforms = installed()
    runs = [
        WorkspaceRun(w, directory, env, metrics, webchat_port, platforms)
        for w in load_workspaces(manifests, platforms)
    ]
    for run in runs:
        run.prepare()
    for run in runs:
        await run.probe_harnesses()
    private_directory(directory)
    begun: list[WorkspaceRun] = []
    begun_servers: list[web.AppRunner] = []
    begun_tasks: list[asyncio.Task[None]] = []
    try:
        for run in runs:
            begun.append(run)
            await run.start()
        gc_tuning.tune()  # what start-up made lives as long as the run: the collector skips it
        if metrics_port is not None:
            server = await serve_metrics(metrics, lambda: health(runs), metrics_port)
            port = server.addresses[0][1]
            log.info("health and metrics on http://127.0.0.1:%d/healthz and /metrics", port)
            begun_servers.append(server)
        if started is not None:
            result = started(runs)
            if result is not None:
                await result
        if reload is not None:
            watched = watch_reloads(list(zip(runs, manifests, strict=True)), reload)
            begun_tasks.append(asyncio.create_task(watched, name="reloads"))
        await stop.wait()
        log.info("stopping: closing platform connections")
    finally:
        for task in begun_tasks:  # a reload under way is cut short: the ledger has what it took
            task.cancel()
        await asyncio.gather(*begun_tasks, return_exceptions=True)
        for server in begun_servers:
            await server.cleanup()
        await _shutdown(begun, outbox_grace, harness_grace)
        gc_tuning.restore()


async def _shutdown(runs: list[WorkspaceRun], outbox_grace: float, harness_grace: float) -> None:
    await asyncio.gather(*(r.close_connections() for r in runs), return_exceptions=True)
    await asyncio.gather(*(r.finish_outbox(outbox_grace) for r in runs), return_exceptions=True)
    await asyncio.gather(*(r.stop_harnesses(harness_grace) for r in runs), return_exceptions=True)
    for run in runs:
        try:
            await run.close()
        except Exception as exc:
            log.error("%s: closing: %s", run.name, exc)
    log.info("stopped")
