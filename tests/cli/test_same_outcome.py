"""One conversation, three platforms, the same outcome.

`c2a run` in-process with the three agents of the shipped local manifest (the lead; worker-1 and
worker-2, role `backend`), each on the built-in `openai` harness against `AttentiveModel` (it
answers every must_respond event once, and claims a role-addressed event before answering it).
A person has the same short conversation on the fake Slack (the real slack-bolt), the fake
Discord (the real discord.py) and the web chat (its websocket):

1. plain chatter: nobody answers;
2. a mention of the lead: the lead answers, once;
3. a mention of the backend role: one worker answers, after one claim;
4. a mention of the lead, deleted at once, inside the compose window: nobody answers.

Each platform is a small driver with the same methods; the scenario is written once, and every
platform must give the same repliers per step and the same decisions in the ledger.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import pytest
import yaml
from builders import (
    D_BACKEND_ROLE,
    D_HUMAN,
    DISCORD_IDS,
    GUILD,
    HUMAN,
    LOCAL,
    SLACK_IDS,
    TEAM,
    slack_body,
    slack_delete,
    slack_message,
)
from fakes.attentive_model import AttentiveModel
from fakes.discord import FakeDiscord
from fakes.slack import FakeSlack

import adapters.discord.plugin
from adapters.discord.bots import start_connections
from adapters.webchat.normalise import event_id as webchat_event_id
from adapters.webchat.server import WebChat
from c2a.run import WorkspaceRun, run_workspaces
from core.store import Store

AGENTS = ("lead", "worker-1", "worker-2")
QUIET_MS = 1500  # the compose window: the harness waits this long for the conversation to settle
WAIT = 45.0  # a generous bound on every wait: the machine is small and busy
SETTLE = QUIET_MS / 1000 + 2.0  # past the compose window, and then some, for nothing to happen

# One table for every platform. {step: sorted repliers}; the role goes to the least busy
# worker, ties broken by manifest order.
EXPECTED_REPLIES = {
    "chatter": [],
    "ask the lead": ["lead"],
    "ask the backend role": ["worker-1"],
    "ask the lead, then delete": [],
}
# {step: {agent: (directedness, policy)}} as the ledger recorded them.
EXPECTED_DECISIONS = {
    "chatter": {
        "lead": ("ambient", "must_not_respond"),
        "worker-1": ("ambient", "must_not_respond"),
        "worker-2": ("ambient", "must_not_respond"),
    },
    "ask the lead": {
        "lead": ("to_me", "must_respond"),
        "worker-1": ("to_other", "must_not_respond"),
        "worker-2": ("to_other", "must_not_respond"),
    },
    "ask the backend role": {
        "lead": ("to_other", "must_not_respond"),
        "worker-1": ("to_my_role", "may_respond"),
        "worker-2": ("to_my_role", "must_not_respond"),
    },
    "ask the lead, then delete": {
        "lead": ("to_me", "must_respond"),
        "worker-1": ("to_other", "must_not_respond"),
        "worker-2": ("to_other", "must_not_respond"),
    },
}


@dataclass(frozen=True)
class Posted:
    """A person's message: its id in the ledger, the platform's own key for it, its text as
    written on the platform."""

    event_id: str
    key: str
    text: str


class Driver(Protocol):
    """What the scenario does on a platform. `text` may name `{lead}` and `{backend}`, which
    each driver writes as its platform's native mention."""

    run: WorkspaceRun

    async def post(self, text: str) -> Posted: ...

    async def delete(self, posted: Posted) -> None: ...

    def replies_to(self, posted: Posted) -> list[str]: ...


async def eventually(
    check: Callable[[], object | Awaitable[object]], what: str, seconds: float = WAIT
) -> None:
    """Poll `check` (plain or async) until it holds; fail naming `what` after `seconds`."""
    try:
        async with asyncio.timeout(seconds):
            while True:
                result = check()
                if await result if isinstance(result, Awaitable) else result:
                    return
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}") from None


async def decisions(store: Store, event_id: str) -> dict[str, tuple[str, str]]:
    """What the ledger decided for each agent about one event: (directedness, policy)."""
    return {
        d.decision.agent: (d.decision.directedness.value, d.decision.policy.value)
        for d in await store.deliveries(event_id)
    }


# ---- the scenario, once ---------------------------------------------------------------------


async def converse(driver: Driver, model: AttentiveModel) -> dict[str, Posted]:
    """Have the conversation; returns each step's message once nothing more is expected."""
    store = driver.run.store

    async def decided(posted: Posted) -> None:
        async def all_decided() -> bool:
            return set(await decisions(store, posted.event_id)) == set(AGENTS)

        await eventually(all_decided, f"decisions for every agent on {posted.text!r}")

    # Chatter first: the same person's message shortly after one directed at an agent would
    # continue that one.
    chatter = await driver.post("lunch is at noon")
    await decided(chatter)

    asked = await driver.post("{lead} can you check the deploy?")
    await decided(asked)
    await eventually(lambda: driver.replies_to(asked), "the lead's reply")

    roles = await driver.post("{backend} can someone look at the flaky test?")
    await decided(roles)
    await eventually(lambda: driver.replies_to(roles), "a worker's reply")
    claims = [a for name, a in model.calls if name == "chat_claim"]
    assert [c["eventId"] for c in claims] == [roles.event_id]  # one claim, for the role's ask
    held = await store.claims(driver.run.clock.now())
    assert [held[roles.event_id][0]] == driver.replies_to(roles)  # granted to who answered

    gone = await driver.post("{lead} actually, ignore this")
    await driver.delete(gone)
    await decided(gone)
    await asyncio.sleep(SETTLE)  # past the compose window: nothing may answer it
    return {
        "chatter": chatter,
        "ask the lead": asked,
        "ask the backend role": roles,
        "ask the lead, then delete": gone,
    }


# ---- running c2a ----------------------------------------------------------------------------


def local_manifest(directory: Path, model_url: str, platform: str, **settings: Any) -> Path:
    """The shipped local manifest on one platform (`settings` added to its section), each
    agent on the attentive model."""
    data = yaml.safe_load(LOCAL.read_text())
    harness = {"backend": "openai", "base_url": model_url, "model": "m", "quiet_ms": QUIET_MS}
    for section in {"slack", "discord", "webchat"} - {platform}:
        data.pop(section, None)
        for agent in data["agents"].values():
            agent.pop(section, None)
    data[platform] = {**data[platform], **settings}
    for agent in data["agents"].values():
        agent["harness"] = dict(harness)  # its own copy: a shared one is dumped as a YAML alias
    path = directory / "local.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@asynccontextmanager
async def running(
    manifest: Path, environ: Mapping[str, str], data_dir: Path
) -> AsyncIterator[WorkspaceRun]:
    """`c2a run` on one manifest until the block ends, then a clean stop."""
    stop = asyncio.Event()
    runs: list[WorkspaceRun] = []
    task = asyncio.create_task(
        run_workspaces(
            [manifest],
            stop=stop,
            environ=environ,
            data_dir=data_dir,
            webchat_port=0,
            started=runs.extend,
        )
    )
    try:
        await eventually(lambda: bool(runs) or task.done(), "the workspace to start")
        if task.done():
            task.result()  # raises what stopped it
        yield runs[0]
    finally:
        stop.set()
        await asyncio.wait_for(task, WAIT)


_ticks = itertools.count(1)


def fresh_ts() -> str:
    """A Slack ts of now: the host decides on the system clock, and must_respond expires."""
    return f"{time.time() + next(_ticks) / 1000:.6f}"


class SlackDriver:
    """The fake Slack: each event reaches every bot over its own Socket Mode connection, as
    Slack sends it to every app in the channel; replies are `chat.postMessage` in the thread."""

    mentions = {"lead": f"<@{SLACK_IDS['lead']}>", "backend": "<!subteam^S0BACK>"}
    channel = "C0GEN"

    def __init__(self, slack: FakeSlack, run: WorkspaceRun) -> None:
        self.slack = slack
        self.run = run

    async def post(self, text: str) -> Posted:
        written = text.format(**self.mentions)
        ts = self.slack.add_message(self.channel, written, user=HUMAN, ts=fresh_ts())
        await self._to_every_bot(slack_message(ts, written, user=HUMAN, channel=self.channel))
        return Posted(f"slack:{TEAM}:{self.channel}:{ts}", ts, written)

    async def delete(self, posted: Posted) -> None:
        history = self.slack.messages[self.channel]
        history[:] = [m for m in history if m["ts"] != posted.key]
        await self._to_every_bot(slack_delete(posted.key, fresh_ts(), posted.text, user=HUMAN))

    def replies_to(self, posted: Posted) -> list[str]:
        posts = self.slack.calls_to("chat.postMessage")
        return [BY_BOT_TOKEN[p.token] for p in posts if p.params.get("thread_ts") == posted.key]

    async def _to_every_bot(self, event: dict[str, Any]) -> None:
        for agent in AGENTS:
            body = slack_body(event, via=agent)
            await self.slack.send_event(body, app_token=SLACK_APP_TOKENS[agent])


# The infix of each agent's token variables in the shipped manifest (SLACK_W1_BOT_TOKEN, ...).
VARIABLE = {"lead": "LEAD", "worker-1": "W1", "worker-2": "W2"}
SLACK_BOT_TOKENS = {agent: f"xoxb-{agent}-test" for agent in AGENTS}
SLACK_APP_TOKENS = {agent: f"xapp-1-{agent}-test" for agent in AGENTS}
BY_BOT_TOKEN: dict[str | None, str] = {token: a for a, token in SLACK_BOT_TOKENS.items()}


@asynccontextmanager
async def on_slack(
    tmp: Path, model: AttentiveModel, _: pytest.MonkeyPatch
) -> AsyncIterator[Driver]:
    environ = {}
    async with FakeSlack(wait_timeout=WAIT) as slack:
        for agent in AGENTS:
            slack.add_bot(SLACK_BOT_TOKENS[agent], SLACK_IDS[agent], f"B0{VARIABLE[agent]}", TEAM)
            environ[f"SLACK_{VARIABLE[agent]}_BOT_TOKEN"] = SLACK_BOT_TOKENS[agent]
            environ[f"SLACK_{VARIABLE[agent]}_APP_TOKEN"] = SLACK_APP_TOKENS[agent]
        slack.add_user(HUMAN, "ana", team_id=TEAM)
        # Who is in the channel, as `conversations.members` tells the run when it starts.
        slack.members[SlackDriver.channel] = [HUMAN, *SLACK_IDS.values()]
        manifest = local_manifest(tmp, model.base_url, "slack", api_url=slack.api_url)
        async with running(manifest, environ, tmp / "data") as run:
            await slack.wait_connected(len(AGENTS))
            yield SlackDriver(slack, run)


class DiscordDriver:
    """The fake Discord: a message reaches every bot's gateway session; replies are messages
    referencing the one they answer."""

    mentions = {"lead": f"<@{DISCORD_IDS['lead']}>", "backend": f"<@&{D_BACKEND_ROLE}>"}
    channel = "820000000000000001"

    def __init__(self, fake: FakeDiscord, run: WorkspaceRun) -> None:
        self.fake = fake
        self.run = run

    async def post(self, text: str) -> Posted:
        message = await self.fake.user_says(self.channel, D_HUMAN, text.format(**self.mentions))
        return Posted(f"discord:{message['id']}", str(message["id"]), message["content"])

    async def delete(self, posted: Posted) -> None:
        """The person deletes it: gone from the channel, MESSAGE_DELETE to every session."""
        del self.fake.messages[posted.key]
        deleted = {"id": posted.key, "channel_id": self.channel, "guild_id": GUILD}
        await self.fake.dispatch("MESSAGE_DELETE", deleted)

    def replies_to(self, posted: Posted) -> list[str]:
        by_id = {user_id: agent for agent, user_id in DISCORD_IDS.items()}
        return [
            by_id[str(m["author"]["id"])]
            for m in self.fake.messages.values()
            if str(m.get("message_reference", {}).get("message_id")) == posted.key
        ]


@asynccontextmanager
async def on_discord(
    tmp: Path, model: AttentiveModel, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Driver]:
    # discord.py waits `guild_ready_timeout` (2 s) after GUILD_CREATE before it is ready.
    quick = functools.partial(start_connections, guild_ready_timeout=0.05)
    monkeypatch.setattr(adapters.discord.plugin, "start_connections", quick)
    environ = {}
    async with FakeDiscord(guild_id=GUILD) as fake:
        # The fake's virtual clock starts in 2024; the host decides on the system clock, where
        # a two-year-old mention is past its must_respond deadline. Start it at now.
        fake._clock_ms = int(time.time() * 1000)
        # The run points discord.py at the manifest's URLs process-wide; patching first has
        # monkeypatch put discord.py's class attributes back after the test.
        fake.patch(monkeypatch)
        for agent, user_id in DISCORD_IDS.items():
            token = f"{agent}-token-not-a-secret"
            fake.add_bot(token, user_id, agent, application_id=user_id)  # as in the manifest
            environ[f"DISCORD_{VARIABLE[agent]}_TOKEN"] = token
        fake.add_member(D_HUMAN, "ana")
        fake.add_role(D_BACKEND_ROLE, "backend")
        fake.add_channel(DiscordDriver.channel, "general")
        api = {"api_url": f"{fake.url}/api/v10", "gateway_url": f"{fake.ws_url}/"}
        manifest = local_manifest(tmp, model.base_url, "discord", **api)
        async with running(manifest, environ, tmp / "data") as run:
            yield DiscordDriver(fake, run)


class WebchatDriver:
    """The web chat through a page's websocket, as ana; replies name the message they answer."""

    mentions = {"lead": "@lead", "backend": "@backend"}
    channel = "general"

    def __init__(self, socket: aiohttp.ClientWebSocketResponse, run: WorkspaceRun) -> None:
        assert "webchat" in run.connections
        self.socket = socket
        self.chat: WebChat = run.connections["webchat"].chat
        self.run = run

    async def post(self, text: str) -> Posted:
        before = set(self.chat.history.messages)
        written = text.format(**self.mentions)
        await self.socket.send_json(
            {"op": "post", "as": "ana", "channel": self.channel, "text": written}
        )
        await eventually(lambda: set(self.chat.history.messages) - before, "the post to land")
        [key] = set(self.chat.history.messages) - before
        return Posted(webchat_event_id(self.run.name, key), key, written)

    async def delete(self, posted: Posted) -> None:
        await self.socket.send_json({"op": "delete", "as": "ana", "id": posted.key})

    def replies_to(self, posted: Posted) -> list[str]:
        return [m.user for m in self.chat.history if m.reply_to == posted.key]


@asynccontextmanager
async def on_webchat(
    tmp: Path, model: AttentiveModel, _: pytest.MonkeyPatch
) -> AsyncIterator[Driver]:
    manifest = local_manifest(tmp, model.base_url, "webchat")
    async with (
        running(manifest, {}, tmp / "data") as run,
        aiohttp.ClientSession() as http,
    ):
        assert "webchat" in run.connections
        page = run.connections["webchat"].chat
        async with http.ws_connect(page.link("/ws"), origin=page.origin) as socket:
            yield WebchatDriver(socket, run)


Platform = Callable[[Path, AttentiveModel, pytest.MonkeyPatch], AbstractAsyncContextManager[Driver]]
PLATFORMS: dict[str, Platform] = {"slack": on_slack, "discord": on_discord, "webchat": on_webchat}


# ---- the test -------------------------------------------------------------------------------


@pytest.mark.parametrize("platform", list(PLATFORMS))
def test_one_conversation_has_the_same_outcome_on_every_platform(
    platform: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> tuple[dict[str, list[str]], dict[str, dict[str, tuple[str, str]]]]:
        async with (
            asyncio.timeout(240),
            AttentiveModel() as model,
            PLATFORMS[platform](tmp_path, model, monkeypatch) as driver,
        ):
            steps = await converse(driver, model)
            replies = {step: sorted(driver.replies_to(p)) for step, p in steps.items()}
            decided = {
                step: await decisions(driver.run.store, p.event_id) for step, p in steps.items()
            }
            return replies, decided

    replies, decided = asyncio.run(scenario())
    assert replies == EXPECTED_REPLIES
    assert decided == EXPECTED_DECISIONS
