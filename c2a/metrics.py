"""`c2a run`'s health and metrics: `/healthz` (JSON) and `/metrics` (Prometheus text), served
on 127.0.0.1 only.

Counters are counted where the thing happens, through three small hooks the run wires in: its
sink (`Metrics.observe`: decisions, queued actions, escalations), its ledger (`CountedStore`:
claims, delivery re-attempts) and its outbox's view of the senders (`CountedSenders`: every
send by result). What is better read than counted (queue depths, the turns the built-in
harnesses finished) is read from the ledger or the harnesses when `/metrics` is scraped; what
takes a database read (queue depths, the delivery lag), on SQLite and PostgreSQL alike, is read
by `Metrics.refresh` just before. `/healthz` says whether each workspace's database answers.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, LiteralString

import orjson
from aiohttp import web

from adapters.webchat.access import is_loopback
from core.actions import Action
from core.clock import parse_time
from core.emission import Delivery, Emission, Escalation, Queued
from core.errors import PermanentSendError, StoreError, TransientSendError
from core.outbox import Sender
from core.sqlite_store import SQLiteStore
from core.store import ClaimResult, Store

__all__ = [
    "CountedSenders",
    "CountedStore",
    "Health",
    "Labels",
    "Metrics",
    "serve_metrics",
]

log = logging.getLogger(__name__)

Labels = tuple[tuple[str, str], ...]
Reader = Callable[[], Mapping[Labels, float]]
LaterReader = Callable[[], Awaitable[Mapping[Labels, float]]]
Health = Callable[[], dict[str, Any] | Awaitable[dict[str, Any]]]

PING_TIMEOUT = 2.0  # seconds a database may take to answer `/healthz`'s ping
# Per agent: deliveries pending, and outbox entries due (`pending` or `ambiguous`).
_DEPTHS: dict[str, LiteralString] = {
    "deliveries": "SELECT agent, count(*) FROM deliveries WHERE status = 'pending' GROUP BY agent",
    "outbox": "SELECT agent, count(*) FROM outbox "
    "WHERE status IN ('pending', 'ambiguous') GROUP BY agent",
}
_OLDEST_PENDING: LiteralString = (
    "SELECT agent, min(decided_at) FROM deliveries WHERE status = 'pending' GROUP BY agent"
)

_HELP = {
    "c2a_events_total": "Inbound events taken into the ledger, by workspace and platform",
    "c2a_deliveries_total": "Decisions delivered to harnesses, by workspace, policy and mode",
    "c2a_outbound_total": "Platform actions the engine queued, by workspace and action",
    "c2a_claims_total": "Claims asked of the ledger, by workspace and result (granted, refused)",
    "c2a_escalations_total": "Escalations to the lead, by workspace and reason",
    "c2a_model_turns_total": (
        "Model turns the built-in harnesses finished, by workspace, agent and outcome"
    ),
    "c2a_model_turns_running": (
        "Model turns the built-in harnesses are running or about to run, by workspace and agent"
    ),
    "c2a_agent_unavailable": (
        "1 while an agent's harness or model is known to be down, else 0, by workspace and agent"
    ),
    "c2a_sends_total": (
        "Outbox actions tried on a platform, by workspace, platform, action and result "
        "(sent, failed, retried, unknown)"
    ),
    "c2a_retries_total": (
        "Retries, by workspace and what: send (a transient failure, tried again later) or "
        "delivery (a chat/deliver attempted again)"
    ),
    "c2a_leases_held": (
        "Leases this process holds (1 each), by workspace, lease (agent:<id>, host:<holder>) "
        "and holder; only when several processes share a PostgreSQL ledger"
    ),
    "c2a_queue_depth": (
        "Items waiting, by workspace, agent and queue (deliveries pending, outbox due)"
    ),
    "c2a_delivery_lag_seconds": (
        "Age of the oldest delivery not yet acknowledged by its harness, by workspace and agent "
        "(0: none pending)"
    ),
}


def labels(**values: str) -> Labels:
    """Label pairs in the order they are rendered."""
    return tuple(sorted(values.items()))


class Metrics:
    """Counters fed by the run's hooks, and families read when scraped."""

    def __init__(self) -> None:
        self.counters: Counter[tuple[str, Labels]] = Counter()
        self.readers: dict[str, list[Reader]] = {}
        self.kinds: dict[str, str] = {}
        self.refreshers: list[Callable[[], Awaitable[None]]] = []

    def count(self, name: str, **values: str) -> None:
        self.counters[name, labels(**values)] += 1

    def read(self, name: str, reader: Reader, kind: str = "gauge") -> None:
        """Add `reader`'s values to the family `name` on every scrape (one reader per
        workspace: their values are rendered together)."""
        self.readers.setdefault(name, []).append(reader)
        self.kinds[name] = kind

    def read_later(self, name: str, reader: LaterReader, kind: str = "gauge") -> None:
        """As `read`, for values that take a database read: `refresh` reads them, and `render`
        shows what it read last (nothing when that read failed)."""
        found: dict[Labels, float] = {}

        async def refresh() -> None:
            found.clear()
            try:
                found.update(await reader())
            except Exception as exc:  # an unreachable database empties the family, no more
                log.debug("%s not read: %s", name, exc)

        self.refreshers.append(refresh)
        self.read(name, lambda: found, kind)

    async def refresh(self) -> None:
        """Read every `read_later` family, before a scrape renders them."""
        for refresh in self.refreshers:
            await refresh()

    def observe(self, workspace: str, emissions: list[Emission]) -> None:
        """Count what the engine decided: deliveries, queued actions, escalations."""
        for emission in emissions:
            match emission:
                case Delivery(decision=decision):
                    self.count(
                        "c2a_deliveries_total",
                        workspace=workspace,
                        policy=decision.policy.value,
                        mode=decision.mode.value,
                    )
                case Queued(action=action):
                    kind = action.kind
                    self.count("c2a_outbound_total", workspace=workspace, action=kind)
                case Escalation():
                    self.count("c2a_escalations_total", workspace=workspace, reason=emission.reason)

    def render(self) -> str:
        """The Prometheus text exposition of every family."""
        lines: list[str] = []
        for name in sorted({name for name, _ in self.counters} | set(self.readers)):
            lines.append(f"# HELP {name} {_HELP.get(name, name)}")
            lines.append(f"# TYPE {name} {self.kinds.get(name, 'counter')}")
            values: dict[Labels, float] = {
                found: float(v) for (n, found), v in self.counters.items() if n == name
            }
            for reader in self.readers.get(name, []):
                values.update(reader())
            for found, value in sorted(values.items()):
                shown = ",".join(f'{k}="{_escape(v)}"' for k, v in found)
                lines.append(f"{name}{{{shown}}} {value:g}" if shown else f"{name} {value:g}")
        return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


# ---- the hooks -----------------------------------------------------------------------------


class CountedStore:
    """The run's ledger, whichever backend holds it, counting claims and delivery re-attempts
    as they are written, and reading its queue depths for a scrape. Everything else is the
    store's own (`__getattr__`), so this is a `Store` wherever one is taken."""

    def __init__(self, store: Store, metrics: Metrics, workspace: str) -> None:
        self.store = store
        self.metrics = metrics
        self.workspace = workspace

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def claim(self, item: str, agent: str, now: datetime, ttl_ms: int) -> ClaimResult:
        result = await self.store.claim(item, agent, now, ttl_ms)
        outcome = "granted" if result.granted else "refused"
        self.metrics.count("c2a_claims_total", workspace=self.workspace, result=outcome)
        return result

    async def note_attempt(self, event_id: str, agent: str, attempt: int) -> None:
        await self.store.note_attempt(event_id, agent, attempt)
        if attempt > 1:
            self.metrics.count("c2a_retries_total", workspace=self.workspace, what="delivery")

    def gauges(self, agents: Callable[[], Iterable[str]], now: Callable[[], datetime]) -> None:
        """Read the queue depths and the delivery lag of `agents()` on every scrape."""
        read = self.metrics.read_later
        read("c2a_queue_depth", lambda: self.queue_depths(agents()))
        read("c2a_delivery_lag_seconds", lambda: self.delivery_lag(agents(), now()))

    async def queue_depths(self, agents: Iterable[str]) -> dict[Labels, float]:
        """Deliveries pending and outbox entries due (`pending` or `ambiguous`), per agent."""
        depths: dict[Labels, float] = {}
        for queue, sql in _DEPTHS.items():
            found = {str(agent): float(n) for agent, n in await self._rows(sql)}
            for agent in dict.fromkeys([*agents, *found]):
                key = labels(workspace=self.workspace, agent=agent, queue=queue)
                depths[key] = found.get(agent, 0.0)
        return depths

    async def delivery_lag(self, agents: Iterable[str], now: datetime) -> dict[Labels, float]:
        """Per agent, the seconds since its oldest pending delivery was decided (0: none)."""
        oldest = {
            str(agent): parse_time(str(at)) for agent, at in await self._rows(_OLDEST_PENDING)
        }
        return {
            labels(workspace=self.workspace, agent=agent): (
                max(0.0, (now - oldest[agent]).total_seconds()) if agent in oldest else 0.0
            )
            for agent in dict.fromkeys([*agents, *oldest])
        }

    async def database(self) -> dict[str, Any]:
        """For `/healthz`: the store's kind (`sqlite`, `postgresql`) and whether it answers a
        query within `PING_TIMEOUT` (if not, the kind of failure, never its message, which may
        name the server's user)."""
        kind = "sqlite" if isinstance(self.store, SQLiteStore) else "postgresql"
        try:
            async with asyncio.timeout(PING_TIMEOUT):
                await self._rows("SELECT 1")
        except Exception as exc:
            return {"kind": kind, "reachable": False, "error": type(exc).__name__}
        return {"kind": kind, "reachable": True}

    async def _rows(self, sql: LiteralString) -> list[tuple[Any, ...]]:
        """A read on the store's own connection, whichever backend it is."""
        store = self.store
        if isinstance(store, SQLiteStore):
            if store._db is None:
                raise StoreError("the ledger is not open")
            return list(store._db.execute(sql))
        from core.postgres_store import PostgresStore  # psycopg only where it is used

        if not isinstance(store, PostgresStore):
            raise StoreError(f"no reads for a {type(store).__name__}")
        cursor = await store.db.execute(sql)
        return await cursor.fetchall()


class CountedSenders(Mapping[str, Sender]):
    """The run's senders as its outbox sees them: every send is counted by platform, action
    (its kind: `send`, `edit`, `delete`, `react`, `working`) and result (`sent`, `failed`,
    `retried` after a transient failure, `unknown` when the outcome is not known). Senders
    added to the underlying mapping later are counted too."""

    def __init__(self, senders: Mapping[str, Sender], metrics: Metrics, workspace: str) -> None:
        self.senders = senders
        self.metrics = metrics
        self.workspace = workspace

    def __getitem__(self, platform: str) -> Sender:
        return _CountedSender(self.senders[platform], platform, self)

    def __iter__(self) -> Iterator[str]:
        return iter(self.senders)

    def __len__(self) -> int:
        return len(self.senders)


class _CountedSender:
    def __init__(self, sender: Sender, platform: str, counted: CountedSenders) -> None:
        self.sender = sender
        self.platform = platform
        self.counted = counted

    async def send(self, action: Action) -> dict[str, Any]:
        result = "unknown"
        try:
            answer = await self.sender.send(action)
            result = "sent"
            return answer
        except TransientSendError:
            result = "retried"
            raise
        except PermanentSendError:
            result = "failed"
            raise
        finally:
            self._count(action, result)

    async def find(self, action: Action) -> dict[str, Any] | None:
        return await self.sender.find(action)

    def _count(self, action: Action, result: str) -> None:
        metrics, workspace = self.counted.metrics, self.counted.workspace
        metrics.count(
            "c2a_sends_total",
            workspace=workspace,
            platform=self.platform,
            action=action.kind,
            result=result,
        )
        if result == "retried":
            metrics.count("c2a_retries_total", workspace=workspace, what="send")


# ---- serving -------------------------------------------------------------------------------


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def _loopback_host(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuses a request whose Host is not a loopback name: a DNS-rebinding page (a name of
    its own resolving to 127.0.0.1) must not read the agents' names and counts."""
    if not is_loopback(request.url.host or ""):
        return web.Response(status=403, text="this server answers only to a loopback name\n")
    return await handler(request)


async def serve_metrics(metrics: Metrics, health: Health, port: int) -> web.AppRunner:
    """Serve `/healthz` and `/metrics` on 127.0.0.1:`port` (0: the OS picks); returns the
    runner (its `addresses` tell the port; `cleanup()` stops it)."""

    async def healthz(request: web.Request) -> web.Response:
        found = health()
        state = await found if inspect.isawaitable(found) else found
        status = 200 if state.get("ok") else 503
        return web.Response(
            body=orjson.dumps(state), status=status, content_type="application/json"
        )

    async def scrape(request: web.Request) -> web.Response:
        await metrics.refresh()
        return web.Response(text=metrics.render(), content_type="text/plain", charset="utf-8")

    app = web.Application(middlewares=[_loopback_host])
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", scrape)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner
