"""A workspace's manifest read again while `c2a run` goes on (on SIGHUP): agents added or
removed, channels, roles, settings and intent changed, nothing in flight lost.

A reload is prepared before anything changes: the manifest is validated, the harnesses of
added agents (and of agents whose harness settings changed) are built and probed, and each
platform whose connection or sender reads something that changed (`_part`: its section, the
agents' identities on it, channels, roles, signals) gets its new connection built, so that no
platform is left half on the old manifest. Anything wrong there (a key, an unset variable, a
model server nobody answers at) refuses the whole reload: one error line says why, and the
running manifest is kept, untouched.

Then the engine takes the new workspace while no event is being received (`Gate`): events
that arrive meanwhile wait for the swap and are taken by the new rules. Harnesses of removed or
changed agents stop (their pending deliveries stay in the ledger), new ones start. A changed
platform is reconnected: its old connection closes as at shutdown (what it is taking in
finishes; Slack sends what went unacknowledged again, and the new connection's start catches up
from history), then the new one starts and its sender replaces the old.

What cannot change live, and so refuses the reload with a line saying to restart: the
workspace's name and its ledger (`store`). Token values are read from the environment, which a
running process cannot have changed: a manifest may name other variables, but only ones that
were set when `c2a run` started.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from c2a.logs import redact_logs
from c2a.run_inputs import load_workspaces
from c2a.run_report import say_ready
from core.engine import Engine
from core.errors import C2AError, ManifestError
from core.manifest import Manifest, Workspace
from core.platform import Connection, Platform
from core.redact import Redactor
from harness_bridge.backends.registry import Harness

if TYPE_CHECKING:
    from c2a.run import WorkspaceRun

__all__ = ["Gate", "changed_platforms", "reconfigure", "reload_workspace", "watch_reloads"]

log = logging.getLogger("c2a.run")

_HARNESS_GRACE = 5.0  # seconds a stopped harness is given to end

# What the harnesses, the follow-ups, the sweep and the platforms' button listeners hold of an
# engine: kept, the same objects.
_HELD = frozenset(
    {"store", "clock", "deliveries", "unavailable", "blocked", "followup", "approvals"}
)


class Gate:
    """Receives pass together; a reload waits for those passing to finish, and holds new ones
    back until it is done."""

    def __init__(self) -> None:
        self._passing = 0
        self._closed = False
        self._changed = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def passing(self) -> AsyncIterator[None]:
        async with self._changed:
            await self._changed.wait_for(lambda: not self._closed)
            self._passing += 1
        try:
            yield
        finally:
            async with self._changed:
                self._passing -= 1
                self._changed.notify_all()

    @contextlib.asynccontextmanager
    async def closed(self) -> AsyncIterator[None]:
        async with self._changed:
            await self._changed.wait_for(lambda: not self._closed)
            self._closed = True
            await self._changed.wait_for(lambda: self._passing == 0)
        try:
            yield
        finally:
            async with self._changed:
                self._closed = False
                self._changed.notify_all()


async def reconfigure(engine: Engine, workspace: Workspace, redactor: Redactor) -> None:
    """`engine` deciding by `workspace` from now on: every part it builds from a workspace is
    built again, as a new engine builds it, its state folded from the ledger; who is in which
    channel, as the platforms' lookups said at their start (not in the ledger), is kept for
    the agents still there. Then, with no wait in between (so a harness's tool call or the
    sweep sees the old engine or the new, never half of each), those parts replace the old
    ones, and what others hold of the engine is kept and pointed at the new workspace."""
    fresh = Engine(workspace, engine.store, engine.clock, redactor=redactor)
    await fresh.rebuild()
    agents = set(workspace.agent_ids)
    for scope, seen in engine.state.members.items():
        fresh.note_members(scope, seen & agents)
    for name, value in vars(fresh).items():
        if name not in _HELD:
            setattr(engine, name, value)
    engine.deliveries.framer = fresh.framer
    engine.decider.unavailable = engine.unavailable
    engine.approvals.approvers = fresh.approvals.approvers  # questions still open stay open
    engine.followup.workspace = workspace
    engine.followup.classifier = fresh.classifier


def changed_platforms(old: Manifest, new: Manifest, platforms: Mapping[str, Platform]) -> list[str]:
    """The platforms whose part of the manifest differs between `old` and `new`."""
    return [
        name
        for name, platform in platforms.items()
        if _part(old, name, platform) != _part(new, name, platform)
    ]


def _part(manifest: Manifest, name: str, platform: Platform) -> tuple[Any, ...]:
    """What a platform's connection and sender read of the manifest: its own section, each
    agent's identity on it (for a platform that names agents by id, which agents there are),
    and what every sender renders by: channels, roles and who has them, signal glyphs."""
    section = platform.manifest
    settings = manifest.section(name, section.settings) if section.settings else None
    agents = manifest.agents
    if section.agent is None:
        identities: Any = tuple(agents)
    else:
        identities = {a: config.section(name, section.agent) for a, config in agents.items()}
    rendered = (manifest.channels, manifest.roles, manifest.signals)
    return settings, identities, rendered, {a: config.roles for a, config in agents.items()}


@dataclass
class _Plan:
    """A reload, prepared: what starts, what stops, what reconnects."""

    workspace: Workspace
    redactor: Redactor
    harnesses: dict[str, Harness] = field(default_factory=dict)
    stopped: list[str] = field(default_factory=list)
    connections: dict[str, Connection | None] = field(default_factory=dict)

    def summary(self, old: Manifest) -> str:
        new = self.workspace.manifest
        added = [a for a in new.agents if a not in old.agents]
        removed = [a for a in old.agents if a not in new.agents]
        restarted = [a for a in self.harnesses if a in self.stopped]
        parts = {
            "agents added": added,
            "removed": removed,
            "harnesses restarted": restarted,
            "platforms reconnected": list(self.connections),
        }
        said = [f"{what}: {', '.join(names) or 'none'}" for what, names in parts.items()]
        # An agent given its first harness, or left with none: said only when there is one.
        started = [a for a in self.harnesses if a in old.agents and a not in self.stopped]
        stopped = [a for a in self.stopped if a in new.agents and a not in self.harnesses]
        said += [
            f"{what}: {', '.join(names)}"
            for what, names in (("harnesses started", started), ("harnesses stopped", stopped))
            if names
        ]
        return "; ".join(said)


def _prepare(run: WorkspaceRun, workspace: Workspace) -> _Plan:
    """Everything the reload builds, built; raises C2AError when something cannot be."""
    old, new = run.workspace.manifest, workspace.manifest
    if new.workspace != old.workspace or new.store != old.store:
        raise ManifestError(
            "the workspace's name or its store changed; that needs a restart of c2a run"
        )
    redactor = Redactor.for_manifest(new, run.environ, workspace.secrets)
    plan = _Plan(workspace, redactor)
    for agent, config in new.agents.items():
        before = old.agents.get(agent)
        if before is not None and before.harness == config.harness:
            continue
        if agent in run.harnesses:
            plan.stopped.append(agent)
        if config.harness is not None:
            plan.harnesses[agent] = run.build_harness(agent, config.harness.settings())
    plan.stopped += [a for a in run.harnesses if a not in new.agents]
    context = run.context(workspace, redactor)
    for name in changed_platforms(old, new, run.platforms):
        connect = run.platforms[name].connect
        connection = connect(context) if connect else None
        if connection is not None or name in run.connections:
            plan.connections[name] = connection
    return plan


async def reload_workspace(run: WorkspaceRun, path: str | Path) -> bool:
    """Read `path` again and take it live; False (and one error line) when it is refused."""
    try:
        [workspace] = load_workspaces([path], run.platforms)
        plan = _prepare(run, workspace)
        await run.probe_harnesses({a: workspace.manifest.agents[a] for a in plan.harnesses})
    except C2AError as exc:
        reason = " ".join(str(exc).split())
        log.error(
            "%s: reload refused, still running the manifest read before: %s", run.name, reason
        )
        return False
    old = run.workspace.manifest
    async with run.gate.closed():
        await reconfigure(run.host.engine, workspace, plan.redactor)
        run.workspace = workspace
        run.redactor = run.host.redactor = plan.redactor
        redact_logs(plan.redactor)
    for agent in plan.stopped:
        await _stop_harness(run, agent)
    for agent, harness in plan.harnesses.items():
        run.start_harness(agent, harness)
    run.note_unanswered()
    for name, connection in plan.connections.items():
        await _reconnect(run, name, connection)
    log.info("%s: reloaded %s: %s", run.name, path, plan.summary(old))
    return True


async def _stop_harness(run: WorkspaceRun, agent: str) -> None:
    """Stop `agent`'s harness, removed or changed; what it was owed stays in the ledger."""
    run.harnesses.pop(agent, None)
    run.host.engine.unavailable.up(agent)
    task = run.harness_tasks.pop(agent, None)
    if task is not None:
        task.cancel()
        await asyncio.wait([task], timeout=_HARNESS_GRACE)


async def _reconnect(run: WorkspaceRun, name: str, connection: Connection | None) -> None:
    """Platform `name` connected anew (None: no more): the old connection closes as at
    shutdown, then the new one starts and its sender takes over."""
    old = run.connections.pop(name, None)
    if old is not None:
        await old.close()
    run.senders.pop(name, None)
    if connection is not None:
        run.connections[name] = connection
        await connection.start()
        run.take_sender(name, connection)
        say_ready(run.name, connection.ready())  # the web chat's page has a new address
    if old is not None:
        await old.finish()


async def watch_reloads(
    runs: Sequence[tuple[WorkspaceRun, str | Path]], signalled: asyncio.Event
) -> None:
    """Reload every workspace each time `signalled` is set (by SIGHUP); signals that come
    during a reload make one more."""
    while True:
        await signalled.wait()
        signalled.clear()
        for run, path in runs:
            try:
                await reload_workspace(run, path)
            except Exception as exc:  # the run goes on whatever a reload did
                log.error("%s: reload failed: %s: %s", run.name, type(exc).__name__, exc)
