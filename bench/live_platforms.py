"""The live benchmark's two fake platforms, set up for three bots and ten channels, and how each
writes one person's message to every bot's connection.

Slack: `tests/fakes/slack.py`; the message goes as an `events_api` envelope to each bot's Socket
Mode connection, and as an `app_mention` to the bot it mentions (four platform events a
message). Discord: `tests/fakes/discord.py`; one MESSAGE_CREATE to each bot's gateway session
(three events a message). Messages mention the three agents in turn.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakes.discord import FakeDiscord  # noqa: E402
from fakes.slack import FakeSlack  # noqa: E402

__all__ = ["AGENTS", "DiscordLoad", "PlatformLoad", "SlackLoad"]

AGENTS = ("lead", "worker-1", "worker-2")
CHANNELS = 10
TEAM = "T0BENCH"
HUMAN = "U0HUMAN"
GUILD = "800000000000000777"
D_HUMAN = "810000000000000777"


class PlatformLoad(Protocol):
    """One fake platform under load."""

    name: str
    events_per_message: int

    async def __aenter__(self) -> PlatformLoad: ...

    async def __aexit__(self, *exc_info: object) -> None: ...

    def manifest_section(self) -> dict[str, Any]: ...

    def agent_section(self, agent: str) -> dict[str, Any]: ...

    def environment(self) -> dict[str, str]: ...

    def bare_config(self) -> dict[str, Any]: ...

    def fresh(self) -> None:
        """Forget the connections so far: the next process's are the ones written to."""
        ...

    async def connected(self, timeout: float) -> None: ...

    async def send(self, i: int) -> tuple[str, float]:
        """Write message `i` to every bot; its key and when the first write began."""
        ...


class SlackLoad:
    name = "slack"
    events_per_message = 4

    def __init__(self) -> None:
        self.fake = FakeSlack(wait_timeout=60.0)
        self.users = {a: f"U0B{n}" for n, a in enumerate(AGENTS)}
        self._first_connection = 0

    async def __aenter__(self) -> SlackLoad:
        await self.fake.__aenter__()
        for n, agent in enumerate(AGENTS):
            self.fake.add_bot(f"xoxb-bench-{n}", self.users[agent], f"B0B{n}", team_id=TEAM)
        self.fake.add_user(HUMAN, "Ada")
        for c in range(CHANNELS):
            self.fake.members[f"C0B{c}"] = [HUMAN, *self.users.values()]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.fake.__aexit__(None, None, None)

    def manifest_section(self) -> dict[str, Any]:
        return {"team_id": TEAM, "api_url": self.fake.api_url}

    def agent_section(self, agent: str) -> dict[str, Any]:
        variable = agent.upper().replace("-", "_")
        return {
            "user_id": self.users[agent],
            "bot_token_env": f"BENCH_{variable}_BOT",
            "app_token_env": f"BENCH_{variable}_APP",
        }

    def environment(self) -> dict[str, str]:
        env = {}
        for n, agent in enumerate(AGENTS):
            variable = agent.upper().replace("-", "_")
            env[f"BENCH_{variable}_BOT"] = f"xoxb-bench-{n}"
            env[f"BENCH_{variable}_APP"] = f"xapp-1-bench-{n}"
        return env

    def bare_config(self) -> dict[str, Any]:
        bots = {
            a: {"bot_token": f"xoxb-bench-{n}", "app_token": f"xapp-1-bench-{n}"}
            for n, a in enumerate(AGENTS)
        }
        return {"platform": "slack", "api_url": self.fake.api_url, "bots": bots}

    def fresh(self) -> None:
        self._first_connection = len(self.fake._connections)

    async def connected(self, timeout: float) -> None:
        self.fake.wait_timeout = timeout
        await self.fake._wait_until(lambda: len(self._sockets()) == len(AGENTS), "every bot")

    async def send(self, i: int) -> tuple[str, float]:
        # Sent now, as a live message is (one stamped minutes before it arrives is late, and is
        # decided as a catch-up would be); `i` keeps the ts unique within the second.
        ts = f"{int(time.time())}.{i % 1_000_000:06d}"
        mentioned = AGENTS[i % len(AGENTS)]
        channel = f"C0B{i % CHANNELS}"
        text = f"<@{self.users[mentioned]}> bench message {i}"
        event = {"type": "message", "user": HUMAN, "text": text, "ts": ts, "channel": channel}
        event |= {"event_ts": ts, "team": TEAM, "channel_type": "channel"}
        mention = {k: v for k, v in event.items() if k != "channel_type"} | {"type": "app_mention"}
        frames = []
        for agent, ws in self._sockets().items():
            frames.append((ws, self._envelope(event, agent)))
            if agent == mentioned:
                frames.append((ws, self._envelope(mention, agent)))
        begun = time.monotonic()
        for ws, frame in frames:
            await ws.send_str(frame)
        return ts, begun

    def _sockets(self) -> dict[str, Any]:
        """Each bot's open Socket Mode connection (the newest, after a reconnection)."""
        fresh = self.fake._connections[self._first_connection :]
        tokens = {c.app_token: c.ws for c in fresh if not c.ws.closed}
        found = {a: tokens.get(f"xapp-1-bench-{n}") for n, a in enumerate(AGENTS)}
        return {a: ws for a, ws in found.items() if ws is not None}

    def _envelope(self, event: dict[str, Any], agent: str) -> str:
        payload = {
            "team_id": TEAM,
            "api_app_id": "A0BENCH",
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{uuid.uuid4().hex[:12]}",
            "event_time": int(float(event["ts"])),
            "authorizations": [{"team_id": TEAM, "user_id": self.users[agent], "is_bot": True}],
        }
        envelope = {"envelope_id": str(uuid.uuid4()), "type": "events_api", "payload": payload}
        envelope |= {"accepts_response_payload": False, "retry_attempt": 0, "retry_reason": ""}
        return json.dumps(envelope)


class DiscordLoad:
    name = "discord"
    events_per_message = 3

    def __init__(self) -> None:
        self.fake = FakeDiscord(guild_id=GUILD)
        self.users = {a: f"90000000000000077{n}" for n, a in enumerate(AGENTS)}
        self.channels = [f"82000000000000077{c}" for c in range(CHANNELS)]

    async def __aenter__(self) -> DiscordLoad:
        await self.fake.__aenter__()
        # The fake's ids carry a clock; the host decides on the real one, so start it at now.
        self.fake._clock_ms = int(time.time() * 1000)
        for n, agent in enumerate(AGENTS):
            self.fake.add_bot(f"bench-token-{n}", self.users[agent], agent, f"91000000000000077{n}")
        self.fake.add_member(D_HUMAN, "ada")
        for n, channel in enumerate(self.channels):
            self.fake.add_channel(channel, f"bench-{n}")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.fake.__aexit__()

    def manifest_section(self) -> dict[str, Any]:
        return {
            "guild_id": GUILD,
            "api_url": f"{self.fake.url}/api/v10",
            "gateway_url": f"{self.fake.ws_url}/",
        }

    def agent_section(self, agent: str) -> dict[str, Any]:
        variable = agent.upper().replace("-", "_")
        return {"user_id": self.users[agent], "token_env": f"BENCH_{variable}_DISCORD"}

    def environment(self) -> dict[str, str]:
        return {
            f"BENCH_{a.upper().replace('-', '_')}_DISCORD": f"bench-token-{n}"
            for n, a in enumerate(AGENTS)
        }

    def bare_config(self) -> dict[str, Any]:
        bots = {a: {"token": f"bench-token-{n}"} for n, a in enumerate(AGENTS)}
        return {
            "platform": "discord",
            "api_url": f"{self.fake.url}/api/v10",
            "gateway_url": f"{self.fake.ws_url}/",
            "bots": bots,
        }

    def fresh(self) -> None:
        self.fake._sessions.clear()

    async def connected(self, timeout: float) -> None:
        await self.fake.wait_ready(len(AGENTS), timeout)

    async def send(self, i: int) -> tuple[str, float]:
        mentioned = AGENTS[i % len(AGENTS)]
        content = f"<@{self.users[mentioned]}> bench message {i}"
        channel = self.channels[i % CHANNELS]
        message = self.fake._new_message(channel, self.fake.users[D_HUMAN], {"content": content})
        begun = time.monotonic()
        await self.fake.dispatch("MESSAGE_CREATE", self.fake.as_event(message))
        return str(message["id"]), begun
