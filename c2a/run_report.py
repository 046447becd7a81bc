"""What `c2a run` says about its workspaces: as one starts, what a restart asked again, which
model answers each agent, what runs, and, one warning line each, the two things a new manifest
most often lacks (a platform, a harness); the ready line a platform prints, which goes to the
terminal alone (it may hold a secret: the web chat's URL carries its token), never to the
redacted logs; and `/healthz`'s answer. Lines log as `c2a.run`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from c2a.run import WorkspaceRun

__all__ = ["health", "say_ready", "say_restarted", "say_started"]

log = logging.getLogger("c2a.run")


def say_restarted(name: str, cut: int, told: int) -> None:
    """What a start found left by a stop: answers cut short, questions left unanswered."""
    if cut:
        log.info("%s: %d answer(s) cut short by a stop, asked again", name, cut)
    if told:
        log.info("%s: %d question(s) left unanswered by a stop, asked again", name, told)


def say_started(
    name: str,
    *,
    agents: int,
    harnesses: int,
    platforms: Collection[str],
    models: Mapping[str, Mapping[str, Any]],
    unanswered: Collection[str],
) -> None:
    """Each agent's model, what runs, and a warning when no platform is configured or when
    agents have no harness (`unanswered`: nothing answers them)."""
    for agent, model in models.items():
        if agent not in unanswered:  # the warning below names those
            log.info("%s: %s answers with %s (%s)", name, agent, model["model"], model["where"])
    log.info(
        "%s: running %d agent(s), %d harness(es), platforms: %s",
        name,
        agents,
        harnesses,
        ", ".join(platforms) or "none",
    )
    if not platforms:
        log.warning(
            "%s: no platform is configured, so no message will arrive: give an agent a slack "
            "or discord section, or add `webchat: {}` for the local web chat (docs/manifest.md)",
            name,
        )
    if unanswered:
        log.warning(
            "%s: no harness for %s, so nothing answers: what is asked waits in the ledger, "
            "marked blocked, and the asker is told; give each agent a `harness:` "
            "(docs/harnesses.md)",
            name,
            ", ".join(sorted(unanswered)),
        )


def say_ready(name: str, line: str | None) -> None:
    """A connection's ready line, if it has one, to the terminal."""
    if line is not None:
        print(f"c2a: {name}: {line}", file=sys.stderr, flush=True)


async def health(runs: Collection[WorkspaceRun]) -> dict[str, Any]:
    """`/healthz`: per workspace, which agents' harnesses are down, which agents have none
    (`unanswered`: no restart would change that, so they do not make it unhealthy), and
    whether its database answers (`CountedStore.database`); `ok` unless something is down."""
    workspaces = {}
    for run in runs:
        workspaces[run.name] = {
            "agents": len(run.workspace.manifest.agents),
            "unavailable": sorted(set(run.host.engine.unavailable) - run.unanswered),
            "unanswered": sorted(run.unanswered),
            "database": await run.store.database(),
        }
    down = any(w["unavailable"] or not w["database"]["reachable"] for w in workspaces.values())
    return {"ok": not down, "workspaces": workspaces}
