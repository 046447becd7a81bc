"""`/healthz` and `/metrics` of `c2a run`: every family counted where it happens (the sink, the
ledger, the outbox's view of the senders) or read when scraped (queue depths, model turns),
served on loopback; and a live run's scrape with a real value in each family."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from builders import HUMAN, LEAD, TEAM, slack_body, slack_join, slack_message
from fakes import openai_server as fake_openai
from fakes.slack import FakeSlack
from test_run import APP_TOKEN, BOT_TOKEN, ENV, fresh_ts, wait_for, write_manifest

from c2a.host import Host
from c2a.metric_reads import running_read, turns_read, unavailable_read
from c2a.metrics import CountedSenders, CountedStore, Health, Metrics, serve_metrics
from c2a.platforms import installed
from c2a.run import WorkspaceRun, run_workspaces
from core.action_records import to_record
from core.actions import Action, Post, React
from core.clock import SystemClock, format_time, parse_time
from core.decision import Decision, Directedness, InjectionMode, Policy
from core.emission import Delivery, Emission, Escalation, Facts, Queued
from core.errors import PermanentSendError, TransientSendError
from core.events import Author, ChatEvent, Conversation, ConversationKind, EventKind
from core.manifest import Workspace, parse_manifest
from core.outbox import Outbox
from core.signals import Signal
from core.sqlite_store import SQLiteStore


def deliver(policy: str, mode: str) -> Emission:
    decision = Decision(
        "e1", "lead", Directedness.AMBIENT, Policy(policy), InjectionMode(mode), "x"
    )
    conversation = Conversation("C1", ConversationKind.CHANNEL)
    event = ChatEvent(
        "e1", EventKind.MESSAGE, "slack", "T1", conversation, Author("U1"), datetime.now(UTC)
    )
    return Delivery(decision, event, 1, Facts(None, ()))


async def scrape(port: int) -> str:
    async with (
        asyncio.timeout(10),
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        assert response.status == 200
        return await response.text()


def test_metrics_count_deliveries_by_policy_and_mode_and_serve_on_loopback() -> None:
    async def run() -> None:
        metrics = Metrics()
        metrics.count("c2a_events_total", workspace="acme", platform="slack")
        metrics.observe(
            "acme",
            [
                deliver("must_respond", "buffered"),
                deliver("must_not_respond", "tool_mailbox"),
                Queued(
                    "lead",
                    React(
                        agent="lead",
                        platform="slack",
                        conversation="C1",
                        key="e1:lead:react:seen",
                        message_id="1.0",
                        signal=Signal.SEEN,
                    ),
                ),
                Escalation("lead", "loop_limit", "C1", "e1"),
            ],
        )
        healthy = {"ok": True, "workspaces": {"acme": {"agents": 3, "unavailable": []}}}
        runner = await serve_metrics(metrics, lambda: healthy, 0)
        port = runner.addresses[0][1]
        try:
            text = await scrape(port)
            async with (
                asyncio.timeout(5),
                aiohttp.ClientSession() as http,
                http.get(f"http://127.0.0.1:{port}/healthz") as response,
            ):
                assert response.status == 200
                assert (await response.json())["ok"] is True
        finally:
            await runner.cleanup()
        assert 'c2a_events_total{platform="slack",workspace="acme"} 1' in text
        assert (
            'c2a_deliveries_total{mode="buffered",policy="must_respond",workspace="acme"} 1' in text
        )
        assert 'c2a_outbound_total{action="react",workspace="acme"} 1' in text
        assert 'c2a_escalations_total{reason="loop_limit",workspace="acme"} 1' in text
        assert "# TYPE c2a_deliveries_total counter" in text

    asyncio.run(run())


async def get_healthz(health: Health) -> tuple[int, Any]:
    """Serve `health` and ask `/healthz` once: the status and the JSON."""
    runner = await serve_metrics(Metrics(), health, 0)
    port = runner.addresses[0][1]
    try:
        async with (
            asyncio.timeout(5),
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}/healthz") as response,
        ):
            return response.status, await response.json()
    finally:
        await runner.cleanup()


def test_healthz_says_503_when_a_harness_is_down() -> None:
    down = {"ok": False, "workspaces": {"acme": {"agents": 3, "unavailable": ["lead"]}}}
    status, _ = asyncio.run(get_healthz(lambda: down))
    assert status == 503


def test_healthz_says_503_with_the_database_when_it_does_not_answer() -> None:
    database = {"kind": "postgresql", "reachable": False, "error": "OperationalError"}
    workspace = {"agents": 3, "unavailable": [], "database": database}

    async def health() -> dict[str, Any]:  # a run's health reads the database: awaited
        return {"ok": False, "workspaces": {"acme": workspace}}

    status, said = asyncio.run(get_healthz(health))
    assert status == 503 and said["workspaces"]["acme"]["database"] == database


def test_health_and_metrics_answer_only_to_a_loopback_host() -> None:
    async def run() -> None:
        runner = await serve_metrics(Metrics(), lambda: {"ok": True}, 0)
        port = runner.addresses[0][1]
        try:
            async with asyncio.timeout(5), aiohttp.ClientSession() as http:
                for path in ("/healthz", "/metrics"):
                    url = f"http://127.0.0.1:{port}{path}"
                    async with http.get(url, headers={"Host": "rebound.example"}) as refused:
                        assert refused.status == 403
                    async with http.get(url, headers={"Host": f"localhost:{port}"}) as ok:
                        assert ok.status == 200
        finally:
            await runner.cleanup()

    asyncio.run(run())


class ScriptedSender:
    """A platform that answers each send with the next scripted outcome."""

    def __init__(self, outcomes: list[Exception | dict[str, Any]]) -> None:
        self.outcomes = outcomes

    async def send(self, action: Action) -> dict[str, Any]:
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def find(self, action: Action) -> dict[str, Any] | None:
        return None


def two_agents() -> Workspace:
    slack = {"user_id": LEAD}
    return Workspace.from_manifest(
        parse_manifest(
            {
                "version": 1,
                "workspace": "acme",
                "slack": {"team_id": TEAM},
                "agents": {"lead": {"lead": True, "slack": slack}, "worker": {}},
                "channels": {"C0GEN": {}},
            },
            platforms=installed(),
        ),
        installed(),
    )


def test_the_ledger_and_the_senders_count_claims_retries_and_sends_and_depths_are_read() -> None:
    async def run() -> str:
        metrics = Metrics()
        workspace = two_agents()
        store = CountedStore(SQLiteStore(":memory:"), metrics, "acme")
        store.gauges(lambda: workspace.agent_ids, SystemClock().now)

        async def sink(emissions: list[Emission]) -> None:
            metrics.observe("acme", emissions)

        host = Host(workspace, store, SystemClock(), sink)
        await host.start()
        ts = f"{time.time():.6f}"
        mention = slack_message(ts, f"<@{LEAD}> can you check the deploy?", user=HUMAN)
        await host.receive("slack", slack_body(mention, via="lead"), "lead")
        event_id = f"slack:{TEAM}:C0GEN:{ts}"
        await metrics.refresh()
        before = metrics.render()

        granted, _ = await host.engine.claim("lead", event_id)
        refused, _ = await host.engine.claim("worker", event_id)  # the lead holds it
        assert granted.granted and not refused.granted
        async with store.transaction():
            await store.note_attempt(event_id, "lead", 1)
            await store.note_attempt(event_id, "lead", 2)  # a delivery attempted again
            stamp = format_time(SystemClock().now())
            post = Post(agent="lead", platform="slack", conversation="C0GEN", key="post", text="x")
            await store.put_outbox("post", "lead", to_record(post), stamp)
        sender = ScriptedSender([TransientSendError("busy"), PermanentSendError("no"), {"ts": "1"}])
        outbox = Outbox(store, SystemClock(), CountedSenders({"slack": sender}, metrics, "acme"))
        await outbox.drain()  # the reaction fails for now; the post is refused for good
        await outbox.drain()  # the reaction is sent
        await metrics.refresh()
        await host.close()
        return before + metrics.render()

    text = asyncio.run(run())
    assert 'c2a_queue_depth{agent="lead",queue="deliveries",workspace="acme"} 1' in text
    assert 'c2a_queue_depth{agent="lead",queue="outbox",workspace="acme"} 1' in text
    assert 'c2a_queue_depth{agent="worker",queue="outbox",workspace="acme"} 0' in text
    assert "# TYPE c2a_queue_depth gauge" in text
    assert 'c2a_claims_total{result="granted",workspace="acme"} 1' in text
    assert 'c2a_claims_total{result="refused",workspace="acme"} 1' in text
    assert 'c2a_retries_total{what="delivery",workspace="acme"} 1' in text
    assert 'c2a_retries_total{what="send",workspace="acme"} 1' in text
    react = 'c2a_sends_total{action="react",platform="slack",result='
    assert react + '"retried",workspace="acme"} 1' in text
    assert react + '"sent",workspace="acme"} 1' in text
    assert 'c2a_sends_total{action="send",platform="slack",result="failed",workspace="acme"} 1' in (
        text
    )


def test_model_turns_are_read_from_the_harnesses_that_count_them() -> None:
    builtin = SimpleNamespace(outcomes=Counter(completed=2, failed=1), running=3)
    external = SimpleNamespace()  # a stdio harness: its turns run in another process
    harnesses = {"lead": builtin, "ext": external}
    metrics = Metrics()
    metrics.read("c2a_model_turns_total", turns_read("acme", harnesses), "counter")
    metrics.read("c2a_model_turns_running", running_read("acme", harnesses))
    down = {"ext": parse_time("2026-01-01T00:00:00Z")}
    metrics.read("c2a_agent_unavailable", unavailable_read("acme", lambda: ["lead", "ext"], down))
    text = metrics.render()
    assert "# TYPE c2a_model_turns_total counter" in text
    assert 'c2a_model_turns_total{agent="lead",outcome="completed",workspace="acme"} 2' in text
    assert 'c2a_model_turns_total{agent="lead",outcome="failed",workspace="acme"} 1' in text
    assert 'c2a_model_turns_running{agent="lead",workspace="acme"} 3' in text
    assert 'c2a_agent_unavailable{agent="ext",workspace="acme"} 1' in text
    assert 'c2a_agent_unavailable{agent="lead",workspace="acme"} 0' in text
    assert 'c2a_model_turns_total{agent="ext"' not in text
    assert 'c2a_model_turns_running{agent="ext"' not in text


def test_a_live_run_serves_a_real_value_in_every_family(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ts = fresh_ts()
    event_id = f"slack:{TEAM}:C0GEN:{ts}"
    reply = {"target": {"conversation": "C0GEN"}, "text": "On it.", "inReplyTo": event_id}
    script = [
        fake_openai.completion(
            calls=[
                fake_openai.call("chat_claim", {"eventId": event_id}),
                fake_openai.call("chat_send_message", reply, call_id="call_2"),
            ]
        ),
        fake_openai.completion("Done."),
    ]

    live = 'workspace="live"'
    expected = [
        f'c2a_events_total{{platform="slack",{live}}} 2',
        f'c2a_deliveries_total{{mode="buffered",policy="must_respond",{live}}} 1',
        f'c2a_claims_total{{result="granted",{live}}} 1',
        f'c2a_model_turns_total{{agent="lead",outcome="completed",{live}}} 1',
        f'c2a_sends_total{{action="react",platform="slack",result="retried",{live}}} 1',
        f'c2a_sends_total{{action="react",platform="slack",result="sent",{live}}} 1',
        f'c2a_sends_total{{action="send",platform="slack",result="sent",{live}}} 1',
        f'c2a_retries_total{{what="send",{live}}} 1',
    ]
    read_when_scraped = [
        f'c2a_queue_depth{{agent="lead",queue="deliveries",{live}}} 0',
        f'c2a_delivery_lag_seconds{{agent="lead",{live}}} 0',
        f'c2a_model_turns_running{{agent="lead",{live}}} 0',
        f'c2a_agent_unavailable{{agent="lead",{live}}} 0',
    ]

    async def scenario() -> str:
        async with (
            asyncio.timeout(90),
            FakeSlack(wait_timeout=30) as slack,
            fake_openai.FakeOpenAI(script) as model,
        ):
            slack.add_bot(BOT_TOKEN, LEAD, "B0LEAD", team_id=TEAM)
            slack.fail_next("reactions.add", status=500)  # the `seen` reaction: sent next round
            manifest = write_manifest(tmp_path, api_url=slack.api_url, model_url=model.base_url)
            stop = asyncio.Event()
            runs: list[WorkspaceRun] = []
            task = asyncio.create_task(
                run_workspaces(
                    [manifest],
                    stop=stop,
                    environ=ENV,
                    data_dir=tmp_path / "data",
                    started=runs.extend,
                    metrics_port=0,
                )
            )
            try:
                await slack.wait_connected(1)
                await wait_for(lambda: runs, "the workspace to start", 30)
                await slack.send_event(
                    slack_body(slack_join(LEAD), via="lead"), app_token=APP_TOKEN
                )
                mention = slack_message(ts, "<@U0LEAD> can you check the deploy?", user=HUMAN)
                await slack.send_event(slack_body(mention, via="lead"), app_token=APP_TOKEN)
                counted = runs[0].metrics
                await wait_for(
                    lambda: all(line in counted.render() for line in expected),
                    "the turn, the reply and the reaction's retry to be counted",
                    60,
                )
                return await scrape(metrics_port(caplog))
            finally:
                stop.set()
                await asyncio.wait_for(task, 30)

    with caplog.at_level(logging.INFO):
        text = asyncio.run(scenario())
    for line in expected + read_when_scraped:
        assert line in text, line
    assert re.search(rf'c2a_queue_depth{{agent="lead",queue="outbox",{live}}} \d+\n', text)


def metrics_port(caplog: pytest.LogCaptureFixture) -> int:
    """The port the run said it serves `/metrics` on."""
    for record in caplog.records:
        found = re.match(r"health and metrics on http://127\.0\.0\.1:(\d+)/", record.getMessage())
        if found:
            return int(found.group(1))
    raise AssertionError("the run did not say where it serves /metrics")
