"""What is said while the host is down longer than Slack sends events again still reaches each
agent once: real slack-sdk clients against the fake Slack's history, a Host on a SQLite file
that outlives each "process", restarted on the same ledger after a two-hour outage.

Inside the manifest's window the gap is read from `conversations.history` and
`conversations.replies` and taken in as live events; beyond it, it is logged as missed; a
first run reads nothing."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import (
    HUMAN,
    HUMAN2,
    LEAD,
    SLACK_IDS,
    TEAM,
    local_workspace,
    slack_body,
    slack_message,
)
from fakes.slack import FakeSlack
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.catchup import catch_up
from c2a.host import Host
from c2a.platforms import installed
from c2a.records import record_of
from core.clock import VirtualClock
from core.emission import Emission
from core.errors import ManifestError
from core.manifest import Workspace, parse_manifest
from core.sqlite_store import SQLiteStore
from harness_bridge.envelope import deliver_request
from harness_bridge.prompt import render_event
from harness_bridge.wire import parse_deliver

AGENTS = tuple(SLACK_IDS)
BOT_TOKENS = {agent: f"xoxb-{agent}-test" for agent in AGENTS}
BOT_IDS = {"lead": "B0LEAD", "worker-1": "B0W1", "worker-2": "B0W2"}
T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
LATER = T0 + timedelta(hours=2)  # longer than Slack's hour of retries
CHANNEL, DM = "C0GEN", "D0LEAD"
LOGGER = "adapters.slack.catchup"


def ts(at: datetime, n: int = 0) -> str:
    return f"{int(at.timestamp())}.{n:06d}"


def event_id(channel: str, message_ts: str) -> str:
    return f"slack:{TEAM}:{channel}:{message_ts}"


def workspace(api_url: str, **window: int) -> Workspace:
    catch_up = {"minutes": 30, "messages": 300, **window}
    return local_workspace(slack={"team_id": TEAM, "api_url": api_url, "catch_up": catch_up})


class Process:
    """One run of the host on the ledger file, recording every chat/deliver."""

    def __init__(self, ledger: Path, ws: Workspace, now: datetime) -> None:
        self.store = SQLiteStore(str(ledger))
        self.clock = VirtualClock(now)
        self.host = Host(ws, self.store, self.clock, self.sink)
        self.workspace = ws
        self.delivered: list[tuple[str, str]] = []
        self.params: dict[tuple[str, str], dict[str, Any]] = {}

    async def sink(self, emissions: list[Emission]) -> None:
        for e in map(record_of, emissions):
            if e.kind == "rpc" and e.body.get("method") == "chat/deliver":
                self.delivered.append((e.agent, e.body["params"]["eventId"]))
                self.params[(e.agent, e.body["params"]["eventId"])] = e.body["params"]

    async def live(self, event: dict[str, Any], *agents: str) -> None:
        """A message Slack delivered live to each of `agents`' apps."""
        for agent in agents or AGENTS:
            await self.host.receive("slack", slack_body(event, via=agent), agent)

    async def catch_up(self, slack: FakeSlack, sleep: Any = None) -> int:
        clients = {
            a: AsyncWebClient(token=BOT_TOKENS[a], base_url=slack.api_url, retry_handlers=[])
            for a in AGENTS
        }
        return await catch_up(
            self.workspace,
            clients,
            self.host.receive,
            self.store,
            now=self.clock.now(),
            sleep=sleep,
        )


def fake_slack(test: Callable[[FakeSlack], Awaitable[None]]) -> None:
    async def main() -> None:
        async with asyncio.timeout(30), FakeSlack() as slack:
            for agent in AGENTS:
                slack.add_bot(BOT_TOKENS[agent], SLACK_IDS[agent], BOT_IDS[agent], team_id=TEAM)
            await test(slack)

    asyncio.run(main())


def said(slack: FakeSlack, channel: str, text: str, at: str, **kw: Any) -> str:
    """A message as Slack keeps it (history), returning its event id."""
    slack.add_message(channel, text, user=kw.pop("user", HUMAN), ts=at, **kw)
    return event_id(channel, at)


async def first_run(ledger: Path, slack: FakeSlack) -> tuple[list[str], str]:
    """The earlier run: a channel line, a thread with a reply, a DM to the lead; returns their
    event ids and the thread's root ts."""
    first = Process(ledger, workspace(slack.api_url), T0)
    await first.host.start()
    root = ts(T0, 1)
    seen = [
        said(slack, CHANNEL, "good morning", ts(T0)),
        said(slack, CHANNEL, f"<@{LEAD}> can you look at the deploy?", root),
        said(slack, CHANNEL, "I'll watch too", ts(T0, 2), user=HUMAN2, thread_ts=root),
        said(slack, DM, "ping", ts(T0, 3), user=HUMAN),
    ]
    await first.live(slack_message(ts(T0), "good morning"))
    await first.live(slack_message(root, f"<@{LEAD}> can you look at the deploy?"))
    await first.live(slack_message(ts(T0, 2), "I'll watch too", user=HUMAN2, thread_ts=root))
    await first.live(slack_message(ts(T0, 3), "ping", channel=DM, channel_type="im"), "lead")
    await first.host.close()
    return seen, root


def test_a_restart_after_a_long_outage_catches_up_the_window_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    ledger = tmp_path / "ledger.sqlite3"

    async def scenario(slack: FakeSlack) -> None:
        seen, root = await first_run(ledger, slack)
        window_start = LATER - timedelta(minutes=30)
        old = [  # in the gap, older than the window
            said(slack, CHANNEL, "old news", ts(T0 + timedelta(minutes=10))),
            said(slack, CHANNEL, f"<@{LEAD}> stale question", ts(T0 + timedelta(minutes=11))),
        ]
        new_root = ts(window_start + timedelta(minutes=5))
        while_down = said(slack, CHANNEL, "while down", ts(window_start + timedelta(minutes=1)))
        gap = [
            while_down,
            said(slack, CHANNEL, "more in the old thread", ts(window_start, 7), thread_ts=root),
            said(slack, CHANNEL, f"<@{LEAD}> a new thread", new_root),
            said(
                slack,
                CHANNEL,
                "a reply",
                ts(window_start + timedelta(minutes=6)),
                thread_ts=new_root,
            ),
            said(slack, DM, "are you there?", ts(window_start + timedelta(minutes=7))),
        ]
        gap.sort(key=lambda e: e.rsplit(":", 1)[1])

        second = Process(ledger, workspace(slack.api_url), LATER)
        await second.host.start()
        handed = await second.catch_up(slack)
        ledger_ids = [entry.id async for entry in second.store.ledger()]

        assert ledger_ids == seen + gap, "in order, each once, nothing older than the window"
        for old_id in old:
            assert old_id not in ledger_ids
        for event in gap:
            agents = sorted(a for a, e in second.delivered if e == event)
            expected = ["lead"] if f":{DM}:" in event else sorted(AGENTS)
            assert agents == expected, (event, agents)
        assert handed == 3 * (len(gap) - 1) + 1  # each bot read the channel; the DM, the lead

        # Each is late, and says so: in the delivery, and in the header the model reads.
        timing = second.params[("lead", while_down)]["timing"]
        assert timing["receivedAt"] == "2026-01-01T11:00:00Z"
        [stored] = [
            d for d in await second.store.deliveries(while_down) if d.decision.agent == "lead"
        ]
        again = deliver_request(
            await second.host.engine.deliveries.delivery(stored), compact=False, attempt=2
        )
        assert again["params"]["timing"] == timing
        rendered = render_event(parse_deliver(again["params"]))
        assert (
            "\nlate: sent 29 min before the host received it, while the host was down\n" in rendered
        )

        # Slack sending one of them again later (it still had it queued) is a repeat.
        _, again = while_down.rsplit(":", 1)
        outcome = await second.host.receive(
            "slack", slack_body(slack_message(again, "while down"), via="lead"), "lead"
        )
        assert outcome is not None and outcome.status == "repeat"
        assert [e for _, e in second.delivered].count(while_down) == 3
        await second.host.close()

    fake_slack(scenario)
    missed = [
        r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING
    ]
    assert len(missed) == 3, missed  # one line per bot for the one channel with a gap beyond
    stale = ts(T0 + timedelta(minutes=11))
    for line in missed:
        assert f"conversation {CHANNEL}: the messages after " in line
        assert f"(ts {ts(T0, 1)} to {stale})" in line
        assert "beyond the catch-up window (30 minutes, 300 messages)" in line
        assert "stale question" not in line and "old news" not in line


def test_the_newest_messages_of_the_count_are_kept_and_paging_follows_the_cursor(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger.sqlite3"

    async def scenario(slack: FakeSlack) -> None:
        seen, _ = await first_run(ledger, slack)
        start = LATER - timedelta(minutes=20)
        gap = [said(slack, CHANNEL, f"line {n}", ts(start, n)) for n in range(1, 451)]
        second = Process(ledger, workspace(slack.api_url, messages=250), LATER)
        await second.host.start()
        slack.fail_next("conversations.history", status=429, headers={"Retry-After": "2"})
        waits: list[float] = []

        async def sleep(seconds: float) -> None:
            waits.append(seconds)

        await second.catch_up(slack, sleep)
        ledger_ids = [entry.id async for entry in second.store.ledger()]
        await second.host.close()

        assert ledger_ids == seen + gap[-250:]
        assert waits == [2.0]  # the 429 was waited out, then asked again
        cursors = [c.params.get("cursor") for c in slack.calls_to("conversations.history")]
        assert sum(1 for c in cursors if c) >= 3  # 200 a page: 250 needs a second page, x3 bots

    fake_slack(scenario)


def test_a_first_run_reads_no_history(tmp_path: Path) -> None:
    async def scenario(slack: FakeSlack) -> None:
        said(
            slack,
            CHANNEL,
            f"<@{LEAD}> from before this host ever ran",
            ts(LATER - timedelta(minutes=5)),
        )
        process = Process(tmp_path / "ledger.sqlite3", workspace(slack.api_url), LATER)
        await process.host.start()
        assert await process.catch_up(slack) == 0
        assert [entry.id async for entry in process.store.ledger()] == []
        await process.host.close()
        assert slack.calls_to("conversations.history") == []
        assert slack.calls_to("conversations.replies") == []

    fake_slack(scenario)


def test_a_conversation_slack_will_not_show_one_bot_is_logged_and_the_rest_caught_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = tmp_path / "ledger.sqlite3"

    async def scenario(slack: FakeSlack) -> None:
        seen, _ = await first_run(ledger, slack)
        line = said(slack, CHANNEL, "still here", ts(LATER - timedelta(minutes=3)))
        slack.fail_next("conversations.history", error="not_in_channel")  # the lead's C0GEN
        second = Process(ledger, workspace(slack.api_url), LATER)
        await second.host.start()
        await second.catch_up(slack)
        ids = [entry.id async for entry in second.store.ledger()]
        await second.host.close()
        assert ids == [*seen, line]  # the workers' bots read it

    fake_slack(scenario)
    refused = [
        r.getMessage() for r in caplog.records if "cannot read the history" in r.getMessage()
    ]
    assert refused == [
        f"slack agent lead: cannot read the history of conversation {CHANNEL} (not_in_channel); "
        "what was said there while the host was down is not caught up"
    ]


# ---- the window in the manifest ----------------------------------------------------------------


def test_the_slack_window_defaults_as_discords_does() -> None:
    slack = local_workspace().manifest.slack
    assert slack is not None
    assert (slack.catch_up.minutes, slack.catch_up.messages) == (30, 300)


@pytest.mark.parametrize(
    ("catch_up", "problem"),
    [
        ({"minutes": -1}, "slack.catch_up.minutes: Input should be greater than or equal to 0"),
        ({"messages": "9"}, "slack.catch_up.messages: Input should be a valid integer"),
        ({"hours": 1}, "slack.catch_up.hours: unknown key"),
    ],
)
def test_a_slack_window_that_cannot_work_is_refused(catch_up: dict[str, Any], problem: str) -> None:
    manifest = {
        "version": 1,
        "workspace": "w",
        "slack": {"team_id": TEAM, "catch_up": catch_up},
        "agents": {"lead": {}},
    }
    with pytest.raises(ManifestError) as raised:
        parse_manifest(manifest, "acme.yaml", platforms=installed())
    assert str(raised.value).startswith(f"acme.yaml: {problem}")
