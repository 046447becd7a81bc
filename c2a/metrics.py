"""`c2a run`'s health and metrics: `/healthz` (JSON) and `/metrics` (Prometheus text), served
on 127.0.0.1 only."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from aiohttp import web

from core.engine import Emission

__all__ = ["Metrics", "serve_metrics"]

_HELP = {
    "c2a_events_total": "Inbound events taken into the ledger, by workspace",
    "c2a_deliveries_total": "Decisions delivered to harnesses, by workspace, policy and mode",
    "c2a_outbound_total": "Platform actions queued in the outbox, by workspace and action",
    "c2a_claims_total": "Deliveries that carry a claim, by workspace",
    "c2a_escalations_total": "Escalations to the lead, by workspace and reason",
    "c2a_queue_depth": "Items waiting, by workspace and queue",
}


class Metrics:
    """Counters fed by the run's sink, and gauges read when scraped."""

    def __init__(self) -> None:
        self.counters: Counter[tuple[str, tuple[tuple[str, str], ...]]] = Counter()
        self.gauges: dict[str, Callable[[], Mapping[tuple[tuple[str, str], ...], float]]] = {}

    def count(self, name: str, **labels: str) -> None:
        self.counters[name, tuple(sorted(labels.items()))] += 1

    def observe(self, workspace: str, emissions: list[Emission]) -> None:
        """Count what one ingested event produced."""
        self.count("c2a_events_total", workspace=workspace)
        for emission in emissions:
            body = emission.body
            if emission.kind == "rpc" and body.get("method") == "chat/deliver":
                params = body["params"]
                self.count(
                    "c2a_deliveries_total",
                    workspace=workspace,
                    policy=params["attention"]["policy"],
                    mode=params["injection"]["mode"],
                )
                if "claimedBy" in params["attention"]:
                    self.count("c2a_claims_total", workspace=workspace)
            elif emission.kind == "outbound":
                self.count("c2a_outbound_total", workspace=workspace, action=str(body["action"]))
            elif emission.kind == "escalation":
                self.count("c2a_escalations_total", workspace=workspace, reason=body["reason"])

    def render(self) -> str:
        """The Prometheus text exposition of every counter and gauge."""
        lines: list[str] = []
        names = sorted({name for name, _ in self.counters} | set(self.gauges))
        for name in names:
            lines.append(f"# HELP {name} {_HELP.get(name, name)}")
            kind = "gauge" if name in self.gauges else "counter"
            lines.append(f"# TYPE {name} {kind}")
            values = (
                self.gauges[name]().items()
                if name in self.gauges
                else (
                    (labels, float(v))
                    for (n, labels), v in sorted(self.counters.items())
                    if n == name
                )
            )
            for labels, value in values:
                shown = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
                lines.append(f"{name}{{{shown}}} {value:g}" if shown else f"{name} {value:g}")
        return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


async def serve_metrics(
    metrics: Metrics, health: Callable[[], dict[str, Any]], port: int
) -> web.AppRunner:
    """Serve `/healthz` and `/metrics` on 127.0.0.1:`port` (0: the OS picks); returns the
    runner (its `addresses` tell the port; `cleanup()` stops it)."""

    async def healthz(request: web.Request) -> web.Response:
        state = health()
        status = 200 if state.get("ok") else 503
        return web.Response(
            body=orjson.dumps(state), status=status, content_type="application/json"
        )

    async def scrape(request: web.Request) -> web.Response:
        return web.Response(text=metrics.render(), content_type="text/plain", charset="utf-8")

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", scrape)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner
