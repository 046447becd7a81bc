"""`/healthz` and `/metrics` of `c2a run`: counters from what the sink sees, served on loopback."""

from __future__ import annotations

import asyncio

import aiohttp

from c2a.metrics import Metrics, serve_metrics
from core.engine import Emission


def deliver(policy: str, mode: str, claimed: bool = False) -> Emission:
    attention = {"policy": policy, "reason": "x", "priority": "normal"}
    if claimed:
        attention["claimedBy"] = "agent:worker-1"
    params = {"attention": attention, "injection": {"mode": mode}}
    return Emission("lead", "rpc", {"method": "chat/deliver", "params": params})


def test_metrics_count_deliveries_by_policy_and_mode_and_serve_on_loopback() -> None:
    async def run() -> None:
        metrics = Metrics()
        metrics.count("c2a_events_total", workspace="acme", platform="slack")
        metrics.observe(
            "acme",
            [
                deliver("must_respond", "buffered"),
                deliver("must_not_respond", "tool_mailbox"),
                deliver("may_respond", "buffered", claimed=True),
                Emission("lead", "outbound", {"action": "react"}),
                Emission("lead", "escalation", {"reason": "loop_limit"}),
            ],
        )
        healthy = {"ok": True, "workspaces": {"acme": {"agents": 3, "unavailable": []}}}
        runner = await serve_metrics(metrics, lambda: healthy, 0)
        port = runner.addresses[0][1]
        try:
            async with asyncio.timeout(5), aiohttp.ClientSession() as http:
                async with http.get(f"http://127.0.0.1:{port}/metrics") as response:
                    text = await response.text()
                async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                    assert response.status == 200
                    assert (await response.json())["ok"] is True
        finally:
            await runner.cleanup()
        assert 'c2a_events_total{platform="slack",workspace="acme"} 1' in text
        assert (
            'c2a_deliveries_total{mode="buffered",policy="must_respond",workspace="acme"} 1' in text
        )
        assert 'c2a_claims_total{workspace="acme"} 1' in text
        assert 'c2a_outbound_total{action="react",workspace="acme"} 1' in text
        assert 'c2a_escalations_total{reason="loop_limit",workspace="acme"} 1' in text
        assert "# TYPE c2a_deliveries_total counter" in text

    asyncio.run(run())


def test_healthz_says_503_when_a_harness_is_down() -> None:
    async def run() -> None:
        down = {"ok": False, "workspaces": {"acme": {"agents": 3, "unavailable": ["lead"]}}}
        runner = await serve_metrics(Metrics(), lambda: down, 0)
        port = runner.addresses[0][1]
        try:
            async with (
                asyncio.timeout(5),
                aiohttp.ClientSession() as http,
                http.get(f"http://127.0.0.1:{port}/healthz") as response,
            ):
                assert response.status == 503
        finally:
            await runner.cleanup()

    asyncio.run(run())
