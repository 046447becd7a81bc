"""The agent world (`tests/agent_world.py`) seen through each agent's chat tools."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from agent_world import AGENTS, BASE, CHATTER, DM, ROLE, THANKS, opened

from core.engine import Engine
from core.engine_port import EnginePort
from core.sqlite_store import SQLiteStore
from harness_bridge.backends.registry import HarnessContext
from harness_bridge.tools import ChatTools

__all__ = ["BASE", "CHATTER", "DM", "ROLE", "THANKS", "harness_context", "scenario"]


def harness_context(
    engine: Engine, agent: str, streaming: frozenset[str] = frozenset()
) -> HarnessContext:
    """What `c2a run` builds an agent's harness from, made from the engine as it does."""
    return HarnessContext(EnginePort(engine, agent), engine.deliveries, streaming)


def scenario(
    test: Callable[[Engine, dict[str, ChatTools], SQLiteStore], Awaitable[None]],
    path: str = ":memory:",
) -> None:
    async def run() -> None:
        engine, store = await opened(path)
        tools = {agent: ChatTools(EnginePort(engine, agent)) for agent in AGENTS}
        async with asyncio.timeout(10):
            await test(engine, tools, store)
        await store.close()

    asyncio.run(run())
