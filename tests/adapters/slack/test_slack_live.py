"""The live Slack receive path: the real slack-bolt/slack-sdk against a fake Slack, feeding a real
host (ledger, engine) through `SlackWorkspaceConnections`, three agents as three Slack apps."""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
import yaml
from builders import (
    LOCAL,
    SLACK_IDS,
    TEAM,
    W1,
    axes,
    local_workspace,
    slack_body,
    slack_delete,
    slack_edit,
    slack_join,
    slack_message,
    slack_reaction,
)
from fakes.slack import FakeSlack, sign

from adapters.slack.live import (
    BOT_EVENTS,
    Receive,
    SlackAgentConnection,
    SlackWorkspaceConnections,
)
from adapters.slack.manifest import Mode
from c2a.host import Host
from c2a.records import record_of
from core.clock import SystemClock
from core.emission import Emission
from core.errors import ManifestError
from core.manifest import Workspace
from core.sqlite_store import SQLiteStore
from core.store import LedgerEntry

AGENTS = ("lead", "worker-1", "worker-2")
ENV_PREFIX = {"lead": "SLACK_LEAD", "worker-1": "SLACK_W1", "worker-2": "SLACK_W2"}
BOT_TOKENS = {agent: f"xoxb-{agent}-test" for agent in AGENTS}
APP_TOKENS = {agent: f"xapp-1-{agent}-test" for agent in AGENTS}
SECRETS = {agent: f"not-a-real-secret-{agent}" for agent in AGENTS}
ENV = {
    **{f"{ENV_PREFIX[a]}_BOT_TOKEN": BOT_TOKENS[a] for a in AGENTS},
    **{f"{ENV_PREFIX[a]}_APP_TOKEN": APP_TOKENS[a] for a in AGENTS},
    **{f"{ENV_PREFIX[a]}_SIGNING_SECRET": SECRETS[a] for a in AGENTS},
}
BOT_IDS = {"lead": "B0LEAD", "worker-1": "B0W1", "worker-2": "B0W2"}

_ticks = itertools.count(1)


def fresh_ts() -> str:
    """A Slack ts of now, distinct from every other: `must_respond` expires five minutes after
    the message was posted, and the host runs on the system clock."""
    return f"{time.time() + next(_ticks) / 1000:.6f}"


def workspace(api_url: str) -> Workspace:
    """The local manifest pointed at the fake, with a signing secret variable for each agent."""
    agents = yaml.safe_load(LOCAL.read_text())["agents"]
    for agent, config in agents.items():
        config["slack"]["signing_secret_env"] = f"{ENV_PREFIX[agent]}_SIGNING_SECRET"
    return local_workspace(slack={"team_id": TEAM, "api_url": api_url}, agents=agents)


@dataclass
class Rig:
    """A fake Slack, a host with an in-memory ledger, and the connections between them."""

    slack: FakeSlack
    host: Host
    connections: SlackWorkspaceConnections
    emitted: list[Emission]
    outcomes: list[tuple[str | None, str]] = field(default_factory=list)

    async def send(self, agent: str, event: dict[str, Any], **envelope: Any) -> dict[str, Any]:
        """Deliver `event` to `agent`'s app as Slack would, and return the ack."""
        body = slack_body(event, via=agent)
        return await self.slack.send_event(body, app_token=APP_TOKENS[agent], **envelope)

    async def send_to_all(self, event: dict[str, Any]) -> None:
        for agent in AGENTS:
            await self.send(agent, event)

    async def ledger(self) -> list[LedgerEntry]:
        return [entry async for entry in self.host.store.ledger()]

    def rpcs(self, method: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            (e.agent, e.body["params"])
            for e in map(record_of, self.emitted)
            if e.kind == "rpc" and e.body.get("method") == method
        ]

    def deliveries(self, event_id: str) -> dict[str, dict[str, Any]]:
        """chat/deliver params of one ledger event, per agent."""
        return {a: p for a, p in self.rpcs("chat/deliver") if p["eventId"] == event_id}


Wrap = Callable[[Receive], Receive]


async def acks_within(slack: FakeSlack, seconds: float) -> list[dict[str, Any]]:
    """The acks the fake has after `seconds`, or as soon as it has one: a bounded poll for
    something that should not happen."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            while not slack.acks:
                await asyncio.sleep(0.01)
    return list(slack.acks)


def run(
    scenario: Callable[[Rig], Awaitable[None]], *, mode: Mode = "socket", wrap: Wrap | None = None
) -> None:
    async def main() -> None:
        async with asyncio.timeout(20), FakeSlack() as slack:
            for agent in AGENTS:
                slack.add_bot(BOT_TOKENS[agent], SLACK_IDS[agent], BOT_IDS[agent], team_id=TEAM)
            emitted: list[Emission] = []

            async def sink(emissions: list[Emission]) -> None:
                emitted.extend(emissions)

            manifest = workspace(slack.api_url)
            host = Host(manifest, SQLiteStore(":memory:"), SystemClock(), sink)
            await host.start()
            outcomes: list[tuple[str | None, str]] = []

            async def receive(platform: str, payload: Mapping[str, Any], via: str | None) -> Any:
                outcome = await host.receive(platform, payload, via)
                outcomes.append((via, outcome.status if outcome else "ignored"))
                return outcome

            try:
                connections = SlackWorkspaceConnections.from_workspace(
                    manifest, wrap(receive) if wrap else receive, mode=mode, environ=ENV, port=0
                )
                async with connections:
                    if mode == "socket":
                        await slack.wait_connected(len(AGENTS))
                    await scenario(Rig(slack, host, connections, emitted, outcomes))
            finally:
                await host.close()

    asyncio.run(main())


# -- Socket Mode ------------------------------------------------------------------------------


def test_a_dm_reaches_only_its_agent() -> None:
    async def scenario(rig: Rig) -> None:
        dm = slack_message(
            fresh_ts(), "can you check the deploy?", channel="D0W1", channel_type="im"
        )
        ack = await rig.send("worker-1", dm)

        [entry] = await rig.ledger()
        delivered = rig.deliveries(entry.id)
        assert set(ack) == {"envelope_id"}
        assert list(delivered) == ["worker-1"]
        assert axes(delivered["worker-1"]) == ("to_me", "must_respond", "buffered")
        assert {e.agent for e in rig.emitted} == {"worker-1"}

    run(scenario)


def test_a_mention_seen_by_three_apps_is_one_event_aimed_at_the_one_named() -> None:
    async def scenario(rig: Rig) -> None:
        await rig.send_to_all(slack_join(W1))
        mention = slack_message(fresh_ts(), "<@U0W1> can you check the deploy?")
        await rig.send_to_all(mention)

        entries = [e for e in await rig.ledger() if e.kind == "chat.message"]
        assert len(entries) == 1
        delivered = rig.deliveries(entries[0].id)
        assert axes(delivered["worker-1"]) == ("to_me", "must_respond", "buffered")
        assert delivered["worker-1"]["attention"]["reason"] == "direct_mention"
        for other in ("lead", "worker-2"):
            assert axes(delivered[other]) == ("to_other", "must_not_respond", "tool_mailbox")
        assert [status for _, status in rig.outcomes[-3:]] == ["new", "repeat", "repeat"]
        assert len(rig.slack.acks) == 6

    run(scenario)


def test_the_event_is_in_the_ledger_before_slack_is_acknowledged() -> None:
    stored = asyncio.Event()
    release = asyncio.Event()

    def gated(receive: Receive) -> Receive:
        async def hold(platform: str, payload: Mapping[str, Any], via: str | None) -> Any:
            outcome = await receive(platform, payload, via)
            stored.set()
            await release.wait()
            return outcome

        return hold

    async def scenario(rig: Rig) -> None:
        ts = fresh_ts()
        sending = asyncio.create_task(rig.send("lead", slack_message(ts, "<@U0LEAD> ship it?")))
        await stored.wait()

        in_ledger = [e.id for e in await rig.ledger()]
        acks_while_held = await acks_within(rig.slack, 0.5)
        release.set()
        ack = await sending

        assert in_ledger == [f"slack:{TEAM}:C0GEN:{ts}"]
        assert acks_while_held == []
        assert rig.slack.acks == [ack]

    run(scenario, wrap=gated)


def test_a_failing_receive_leaves_the_envelope_unacknowledged_and_the_redelivery_lands(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failures = {"left": 1}

    def flaky(receive: Receive) -> Receive:
        async def once_broken(platform: str, payload: Mapping[str, Any], via: str | None) -> Any:
            if failures["left"]:
                failures["left"] -= 1
                raise RuntimeError("the ledger is unavailable")
            return await receive(platform, payload, via)

        return once_broken

    async def scenario(rig: Rig) -> None:
        body = slack_body(slack_message(fresh_ts(), "<@U0W1> urgent: prod is down"), via="worker-1")
        rig.slack.wait_timeout = 0.5  # long enough for an ack that was going to come
        with pytest.raises(TimeoutError):
            await rig.slack.send_event(body, app_token=APP_TOKENS["worker-1"])
        rig.slack.wait_timeout = 5.0
        unacknowledged = list(rig.slack.acks)
        assert await rig.ledger() == []

        ack = await rig.slack.send_event(
            body, app_token=APP_TOKENS["worker-1"], retry_attempt=1, retry_reason="timeout"
        )

        assert unacknowledged == [] and rig.slack.acks == [ack]
        assert len(await rig.ledger()) == 1
        stats = rig.connections.connections["worker-1"].stats
        assert (stats.failed, stats.received, dict(stats.retries)) == (1, 1, {"timeout": 1})
        [line] = [r for r in caplog.records if r.name == "adapters.slack.live"]
        assert line.levelno == logging.ERROR and "\n" not in line.getMessage()
        assert "RuntimeError: the ledger is unavailable" in line.getMessage()

    run(scenario, wrap=flaky)


def test_good_events_around_unreadable_ones_are_all_acknowledged_and_decided() -> None:
    def spoiled(key: str, value: Any) -> dict[str, Any]:
        body = slack_body(slack_message(fresh_ts(), "<@U0W1> spoiled"), via="worker-1")
        body["event"][key] = value
        return body

    async def scenario(rig: Rig) -> None:
        before = slack_body(slack_message(fresh_ts(), "<@U0W1> first"), via="worker-1")
        after = slack_body(slack_message(fresh_ts(), "<@U0W1> last"), via="worker-1")
        bodies = [
            before,
            spoiled("ts", "9" * 5000),
            spoiled("ts", "99999999999999.000100"),  # the year 3170843
            spoiled("text", ["not", "text"]),
            after,
        ]
        for body in bodies:
            await rig.slack.send_event(body, app_token=APP_TOKENS["worker-1"])

        assert len(rig.slack.acks) == 5  # every envelope acknowledged: none left for redelivery
        statuses = [status for _, status in rig.outcomes]
        assert statuses == ["new", "ignored", "ignored", "ignored", "new"]
        ledger = [entry.id for entry in await rig.ledger()]
        assert ledger == [
            f"slack:{TEAM}:C0GEN:{before['event']['ts']}",
            f"slack:{TEAM}:C0GEN:{after['event']['ts']}",
        ]
        assert all("worker-1" in rig.deliveries(event_id) for event_id in ledger)
        rows = rig.host.store.db.execute("SELECT reason FROM quarantine ORDER BY id").fetchall()
        assert [row[0].split("'")[1] for row in rows] == ["event.ts", "event.ts", "event.text"]

    run(scenario)


def test_a_user_group_mention_goes_to_one_claimant() -> None:
    async def scenario(rig: Rig) -> None:
        await rig.send_to_all(slack_join(W1))
        text = "<!subteam^S0BACK> can someone look at the failing build?"
        await rig.send_to_all(slack_message(fresh_ts(), text))

        [entry] = [e for e in await rig.ledger() if e.kind == "chat.message"]
        delivered = rig.deliveries(entry.id)
        backend = {a: axes(delivered[a]) for a in ("worker-1", "worker-2")}
        claimant = next(a for a, axis in backend.items() if axis[2] == "buffered")
        other = next(a for a in backend if a != claimant)
        assert backend[claimant] == ("to_my_role", "may_respond", "buffered")
        assert backend[other] == ("to_my_role", "must_not_respond", "notify")
        for agent in ("worker-1", "worker-2"):
            assert delivered[agent]["attention"]["claimedBy"] == f"agent:{claimant}"
        assert axes(delivered["lead"])[0] == "to_other"

    run(scenario)


def test_a_thread_reply_between_one_person_and_one_agent_is_a_question_to_it() -> None:
    async def scenario(rig: Rig) -> None:
        root = fresh_ts()
        await rig.send_to_all(slack_message(root, "<@U0W1> can you check the deploy?"))
        answer = slack_message(fresh_ts(), "on it", user=W1, thread_ts=root, bot_id="B0W1")
        await rig.send_to_all(answer)
        reply = fresh_ts()
        await rig.send_to_all(slack_message(reply, "is it the database?", thread_ts=root))

        delivered = rig.deliveries(f"slack:{TEAM}:C0GEN:{reply}")
        assert axes(delivered["worker-1"]) == ("to_me", "must_respond", "buffered")
        assert delivered["worker-1"]["attention"]["reason"] == "direct_thread_question"
        assert axes(delivered["lead"])[1] == "must_not_respond"

    run(scenario)


def test_an_edit_supersedes_and_a_delete_cancels() -> None:
    async def scenario(rig: Rig) -> None:
        ts = fresh_ts()
        await rig.send_to_all(slack_message(ts, "<@U0W1> can you check the deploy?"))
        edited = fresh_ts()
        new = "<@U0W1> can you check the deploy logs?"
        await rig.send("worker-1", slack_edit(ts, edited, "<@U0W1> can you check...", new))
        await rig.send("worker-1", slack_delete(ts, fresh_ts(), new))

        original, edit = f"slack:{TEAM}:C0GEN:{ts}", f"slack:{TEAM}:C0GEN:{ts}~{edited}"
        cancelled = rig.rpcs("notifications/cancelled")
        assert ("worker-1", {"eventId": original, "reason": "superseded"}) in cancelled
        assert rig.deliveries(edit)["worker-1"]["supersedes"] == original
        assert ("worker-1", {"eventId": edit, "reason": "deleted"}) in cancelled
        assert {e.id for e in await rig.ledger()} >= {original, edit}

    run(scenario)


def test_a_reaction_on_an_agents_message_is_a_signal_to_that_agent() -> None:
    async def scenario(rig: Rig) -> None:
        own = fresh_ts()
        await rig.send_to_all(slack_message(own, "deploy done", user="U0LEAD", bot_id="B0LEAD"))
        await rig.send_to_all(slack_reaction(own, "+1", event_ts=fresh_ts()))

        [reaction] = [e for e in await rig.ledger() if e.kind == "chat.reaction"]
        delivered = rig.deliveries(reaction.id)
        assert axes(delivered["lead"]) == ("to_me", "may_respond", "notify")
        assert delivered["lead"]["attention"]["reason"] == "signal_agree"
        assert axes(delivered["worker-1"])[2] == "silent"

    run(scenario)


def test_the_agents_own_message_and_its_edit_reach_the_ledger_and_are_silent_to_it() -> None:
    async def scenario(rig: Rig) -> None:
        own = fresh_ts()
        text = "deploy done"
        await rig.send("lead", slack_message(own, text, user="U0LEAD", bot_id="B0LEAD"))
        edited = fresh_ts()
        await rig.send("lead", slack_edit(own, edited, text, "deploy done at noon", user="U0LEAD"))

        ids = [e.id for e in await rig.ledger()]
        message, edit = f"slack:{TEAM}:C0GEN:{own}", f"slack:{TEAM}:C0GEN:{own}~{edited}"
        assert ids == [message, edit]
        for event_id in ids:
            lead = rig.deliveries(event_id)["lead"]
            assert axes(lead) == ("ambient", "must_not_respond", "silent")
            assert lead["attention"]["reason"] == "own_message"
        assert len(rig.slack.acks) == 2

    run(scenario)


def test_a_redelivered_envelope_is_one_event_and_the_retry_is_counted() -> None:
    async def scenario(rig: Rig) -> None:
        body = slack_body(slack_message(fresh_ts(), "<@U0W2> status?"), via="worker-2")
        token = APP_TOKENS["worker-2"]
        await rig.slack.send_event(body, app_token=token)
        await rig.slack.send_event(body, app_token=token, retry_attempt=1, retry_reason="timeout")

        assert len(await rig.ledger()) == 1
        assert [status for _, status in rig.outcomes] == ["new", "repeat"]
        assert len(rig.slack.acks) == 2
        assert len(rig.rpcs("chat/deliver")) == 1
        stats = rig.connections.connections["worker-2"].stats
        assert (stats.received, dict(stats.retries)) == (2, {"timeout": 1})

    run(scenario)


def test_every_subscribed_event_type_is_acknowledged() -> None:
    async def scenario(rig: Rig) -> None:
        ts = fresh_ts()
        events = [
            slack_join("U0ALICE", event_ts=fresh_ts()),
            slack_message(ts, "<@U0LEAD> hello", event_type="app_mention"),
            slack_message(ts, "<@U0LEAD> hello"),
            slack_reaction(ts, "eyes", event_ts=fresh_ts()),
            slack_reaction(ts, "eyes", event_ts=fresh_ts(), removed=True),
            {**slack_join("U0ALICE", event_ts=fresh_ts()), "type": "member_left_channel"},
        ]
        for event in events:
            await rig.send("lead", event)

        assert sorted({e["type"] for e in events}) == sorted(BOT_EVENTS)
        assert len(rig.slack.acks) == len(events)
        kinds = [e.kind for e in await rig.ledger()]
        assert kinds.count("chat.message") == 1  # app_mention and its message are one event

    run(scenario)


def test_a_disconnect_is_followed_by_a_reconnect_and_nothing_is_lost() -> None:
    async def scenario(rig: Rig) -> None:
        before, after = fresh_ts(), fresh_ts()
        await rig.send("lead", slack_message(before, "<@U0LEAD> before"))
        await rig.slack.send_disconnect(app_token=APP_TOKENS["lead"])
        await rig.slack.wait_connected(len(AGENTS) + 1)
        await rig.send("lead", slack_message(after, "<@U0LEAD> after"))

        ids = [e.id for e in await rig.ledger()]
        assert ids == [f"slack:{TEAM}:C0GEN:{before}", f"slack:{TEAM}:C0GEN:{after}"]
        assert len(rig.slack.acks) == 2
        opened = rig.slack.calls_to("apps.connections.open")
        assert [c.token for c in opened].count(APP_TOKENS["lead"]) == 2

    run(scenario)


def test_every_slack_call_goes_to_the_manifests_api_url() -> None:
    async def scenario(rig: Rig) -> None:
        await rig.send_to_all(slack_message(fresh_ts(), "hello"))

        # events are taken in ahead of bolt, so none needs bolt's authorize (auth.test)
        methods = {c.method for c in rig.slack.calls}
        assert methods == {"apps.connections.open"}
        tokens = {c.token for c in rig.slack.calls_to("apps.connections.open")}
        assert tokens == set(APP_TOKENS.values())

    run(scenario)


# -- HTTP Events API --------------------------------------------------------------------------


async def post(
    rig: Rig,
    agent: str,
    body: dict[str, Any],
    *,
    secret: str | None = None,
    age: int = 0,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, str]:
    raw = json.dumps(body).encode()
    signed = sign(raw, secret or SECRETS[agent], int(time.time()) - age)
    url = f"http://127.0.0.1:{rig.connections.port}/slack/events/{agent}"
    all_headers = {"Content-Type": "application/json", **signed, **(headers or {})}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=raw, headers=all_headers) as response,
    ):
        return response.status, await response.text()


def test_http_mode_takes_a_signed_event_in_and_records_a_retry() -> None:
    async def scenario(rig: Rig) -> None:
        body = slack_body(slack_message(fresh_ts(), "<@U0W1> can you check?"), via="worker-1")
        first = await post(rig, "worker-1", body)
        retry = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
        second = await post(rig, "worker-1", body, headers=retry)

        assert (first[0], second[0]) == (200, 200)
        assert len(await rig.ledger()) == 1
        assert [status for _, status in rig.outcomes] == ["new", "repeat"]
        stats = rig.connections.connections["worker-1"].stats
        assert (stats.received, dict(stats.retries)) == (2, {"http_timeout": 1})
        assert rig.slack.acks == []  # no Socket Mode here

    run(scenario, mode="http")


def test_http_mode_refuses_a_bad_signature_or_a_stale_timestamp() -> None:
    async def scenario(rig: Rig) -> None:
        body = slack_body(slack_message(fresh_ts(), "<@U0W1> can you check?"), via="worker-1")
        forged = await post(rig, "worker-1", body, secret="someone-elses-secret")
        other_app = await post(rig, "worker-1", body, secret=SECRETS["lead"])
        stale = await post(rig, "worker-1", body, age=6 * 60)

        assert [forged[0], other_app[0], stale[0]] == [401, 401, 401]
        assert await rig.ledger() == []
        assert rig.outcomes == []

    run(scenario, mode="http")


def test_http_mode_answers_url_verification() -> None:
    async def scenario(rig: Rig) -> None:
        body = {
            "token": "legacy",
            "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3",
            "type": "url_verification",
        }
        status, text = await post(rig, "lead", body)

        assert status == 200 and json.loads(text) == {"challenge": body["challenge"]}
        assert rig.outcomes == []

    run(scenario, mode="http")


async def post_raw(rig: Rig, agent: str, raw: bytes, headers: Mapping[str, str]) -> tuple[int, str]:
    url = f"http://127.0.0.1:{rig.connections.port}/slack/events/{agent}"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=io.BytesIO(raw), headers=dict(headers)) as response,
    ):
        return response.status, await response.text()


def signed(raw: bytes, agent: str = "lead", **headers: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        **sign(raw, SECRETS[agent], int(time.time())),
        **headers,
    }


FORM = {"Content-Type": "application/x-www-form-urlencoded"}
MALFORMED: list[tuple[str, bytes, Callable[[bytes], dict[str, str]], int]] = [
    ("no body, no headers", b"", lambda raw: {}, 401),
    ("no body, signed", b"", signed, 400),
    ("not JSON, unsigned", b"{not json", lambda raw: {"Content-Type": "application/json"}, 401),
    ("not JSON, signed", b"{not json", signed, 400),
    ("JSON, not an object", b"[1, 2]", signed, 400),
    ("form garbage, signed", b"payload=%7Bnot-json&x", lambda raw: {**signed(raw), **FORM}, 400),
    ("form garbage, unsigned", b"payload=%7Bnot-json", lambda raw: FORM, 401),
    ("a form without a payload, signed", b"x=1", lambda raw: {**signed(raw), **FORM}, 400),
    (
        "a payload that is no object, signed",
        b"payload=%5B1%5D",
        lambda raw: {**signed(raw), **FORM},
        400,
    ),
    (
        "a payload whose type is no string, signed",
        b"payload=%7B%22type%22%3A5%7D",
        lambda raw: {**signed(raw), **FORM},
        400,
    ),
    ("not UTF-8, signed", b'{"type": "caf\xe9"}', signed, 400),
    (
        "a shape bolt cannot read, signed",
        b'{"type": "event_callback", "authorizations": 5}',
        signed,
        400,
    ),
    (
        "a timestamp that is no number",
        b"{}",
        lambda raw: {**signed(raw), "X-Slack-Request-Timestamp": "soon"},
        401,
    ),
    (
        "a timestamp of 5,000 digits",
        b"{}",
        lambda raw: {**signed(raw), "X-Slack-Request-Timestamp": "9" * 5000},
        401,
    ),
    ("no signature", b"{}", lambda raw: {"X-Slack-Request-Timestamp": str(int(time.time()))}, 401),
    (
        "a signature of another shape",
        b"{}",
        lambda raw: {**signed(raw), "X-Slack-Signature": "v1=zz"},
        401,
    ),
    ("a type that is no string, signed", b'{"type": 5}', signed, 400),
    ("an event that is no object, signed", b'{"type": "event_callback", "event": 5}', signed, 400),
    (
        "an event type that is no string, signed",
        b'{"type": "event_callback", "event": {"type": ["message"]}}',
        signed,
        400,
    ),
    (
        "authorizations that are not objects, signed",
        b'{"type": "event_callback", "event": {"type": "message"}, "authorizations": [5]}',
        signed,
        400,
    ),
    (
        "ids of the wrong types, signed",
        b'{"type": "event_callback", "event": {"type": "message", "user": 5, "channel": [1]},'
        b' "team": 5, "enterprise": 5, "user": {"id": 5}}',
        signed,
        400,
    ),
    (
        "an event the normaliser cannot read, signed: taken in, quarantined, acknowledged",
        b'{"type": "event_callback", "team_id": "T0LOCAL",'
        b' "event": {"type": "message", "text": ["x"], "ts": "1.0", "user": "U1"}}',
        signed,
        200,
    ),
    ("too large, unsigned", b"{" + b" " * (2 << 20) + b"}", lambda raw: {}, 413),
    ("too large, signed", b"{" + b" " * (2 << 20) + b"}", signed, 413),
]


@pytest.mark.parametrize(
    ("raw", "headers", "status"),
    [case[1:] for case in MALFORMED],
    ids=[case[0] for case in MALFORMED],
)
def test_http_mode_answers_a_malformed_or_unsigned_request_with_a_4xx_and_no_traceback(
    raw: bytes,
    headers: Callable[[bytes], dict[str, str]],
    status: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario(rig: Rig) -> None:
        answer = await post_raw(rig, "lead", raw, headers(raw))
        good = slack_body(slack_message(fresh_ts(), "<@U0LEAD> still there?"), via="lead")
        after = await post(rig, "lead", good)

        assert (answer[0], after[0]) == (status, 200)
        assert "Traceback" not in answer[1] and len(answer[1]) < 200
        assert len(await rig.ledger()) == 1

    with caplog.at_level(logging.DEBUG):
        run(scenario, mode="http")
    assert not [r for r in caplog.records if r.exc_info and r.levelno > logging.DEBUG]
    assert "Traceback" not in caplog.text


# -- configuration ----------------------------------------------------------------------------


def test_a_missing_token_variable_is_named_and_its_neighbours_values_are_not_shown() -> None:
    env = {k: v for k, v in ENV.items() if k != "SLACK_W2_APP_TOKEN"}

    async def receive(platform: str, payload: Mapping[str, Any], via: str | None) -> None:
        return None

    with pytest.raises(ManifestError) as missing:
        SlackWorkspaceConnections.from_workspace(local_workspace(), receive, environ=env)

    assert str(missing.value) == (
        "agents.worker-2.slack.app_token_env names SLACK_W2_APP_TOKEN, which is not set"
    )
    assert not any(token in str(missing.value) for token in ENV.values())


def test_http_mode_without_a_signing_secret_is_refused() -> None:
    async def receive(platform: str, payload: Mapping[str, Any], via: str | None) -> None:
        return None

    with pytest.raises(ManifestError, match="signing_secret_env is needed"):
        SlackWorkspaceConnections.from_workspace(
            local_workspace(), receive, mode="http", environ=ENV
        )
    with pytest.raises(ValueError, match="signing secret"):
        SlackAgentConnection("lead", receive, bot_token="xoxb-test", mode="http")


def test_the_manifest_chooses_the_mode_and_the_listening_address() -> None:
    async def receive(platform: str, payload: Mapping[str, Any], via: str | None) -> None:
        return None

    listen = {"host": "0.0.0.0", "port": 8088}
    chosen = workspace("http://127.0.0.1:9/api/")
    data = chosen.manifest.model_dump(mode="json", exclude_none=True)
    http = local_workspace(
        slack={"team_id": TEAM, "mode": "http", "listen": listen}, agents=data["agents"]
    )
    served = SlackWorkspaceConnections.from_workspace(http, receive, environ=ENV)
    assert (served.host, served.port) == ("0.0.0.0", 8088)
    assert {c.mode for c in served.connections.values()} == {"http"}
    default = SlackWorkspaceConnections.from_workspace(local_workspace(), receive, environ=ENV)
    assert (default.host, default.port) == ("127.0.0.1", 3000)
    assert {c.mode for c in default.connections.values()} == {"socket"}
    with pytest.raises(Exception, match="mode"):
        local_workspace(slack={"team_id": TEAM, "mode": "webhook"})
