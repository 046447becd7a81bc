"""The bare platform library on the live benchmark's load: three bots' slack-bolt apps over
Socket Mode, or three discord.py clients, each noting when a message reached its handler and
doing nothing else.

    python bench/live_bare.py CONFIG_JSON OUT_FILE

CONFIG_JSON (written by `bench/live_bench.py`) names the platform, where the fake server is
and each bot's tokens. Each line of OUT_FILE is `<agent> <message key> <CLOCK_MONOTONIC>`,
the key being what ends the product's event id (a Slack ts, a Discord message id), so both
sides are read alike. The process runs until its stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

FLUSH_EVERY_S = 0.05

Note = Callable[[str, str], None]


async def slack_bots(config: dict[str, Any], note: Note) -> Callable[[], Awaitable[None]]:
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
    from slack_bolt.app.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient

    handlers = []
    for agent, bot in config["bots"].items():
        app = AsyncApp(
            client=AsyncWebClient(token=bot["bot_token"], base_url=config["api_url"]),
            signing_secret="",
            ignoring_self_events_enabled=False,
        )

        app.event("message")(_noting(note, agent))
        app.event("app_mention")(_ignored)  # taken and acknowledged, as the product does
        handler = AsyncSocketModeHandler(app, bot["app_token"])
        await handler.connect_async()
        handlers.append(handler)

    async def close() -> None:
        for handler in handlers:
            await handler.close_async()

    return close


async def discord_bots(config: dict[str, Any], note: Note) -> Callable[[], Awaitable[None]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import discord

    from adapters.discord.clients import agent_intents, use_endpoints

    use_endpoints(config["api_url"], config["gateway_url"])
    clients: list[discord.Client] = []
    running: list[asyncio.Task[None]] = []
    for agent, bot in config["bots"].items():
        client = discord.Client(
            intents=agent_intents(message_content=True), max_messages=None, guild_ready_timeout=0.05
        )

        client.event(_on_message(note, agent))
        await client.login(bot["token"])
        running.append(asyncio.create_task(client.connect()))
        clients.append(client)

    async def close() -> None:
        for client in clients:
            await client.close()
        await asyncio.gather(*running, return_exceptions=True)

    return close


def _noting(note: Note, agent: str) -> Callable[[dict[str, Any]], Awaitable[None]]:
    """A bolt listener noting `agent`'s receipt (bolt passes arguments by their names)."""

    async def taken(event: dict[str, Any]) -> None:
        note(agent, str(event.get("ts")))

    return taken


async def _ignored() -> None:
    return None


def _on_message(note: Note, agent: str) -> Callable[[Any], Awaitable[None]]:
    async def on_message(message: Any) -> None:
        note(agent, str(message.id))

    return on_message


async def main(config_path: str, out_path: str) -> None:
    with open(config_path, encoding="utf-8") as file:
        config = json.load(file)
    lines: list[str] = []

    def note(agent: str, key: str) -> None:
        lines.append(f"{agent} {key} {time.monotonic():.6f}\n")

    start = slack_bots if config["platform"] == "slack" else discord_bots
    close = await start(config, note)
    stdin_closed = asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    with open(out_path, "a", encoding="utf-8") as out:
        while not stdin_closed.done():
            await asyncio.sleep(FLUSH_EVERY_S)
            out.writelines(lines)
            out.flush()
            lines.clear()
        out.writelines(lines)
    await close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
