"""A small world for an agent's port and its tools: three agents, a DM, a role mention,
chatter and thanks, ingested into a fresh ledger on a virtual clock."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from builders import (
    HUMAN2,
    LEAD,
    W1,
    W2,
    ingest_slack,
    local_workspace,
    slack_body,
    slack_join,
    slack_message,
)

from core.clock import VirtualClock, parse_time
from core.engine import Engine
from core.engine_port import EnginePort
from core.sqlite_store import SQLiteStore

BASE = 1767225600
DM = f"slack:T0LOCAL:D0LEAD:{BASE + 1}.000100"
ROLE = f"slack:T0LOCAL:C0GEN:{BASE + 2}.000100"
CHATTER = f"slack:T0LOCAL:C0GEN:{BASE + 3}.000100"
THANKS = f"slack:T0LOCAL:D0LEAD:{BASE + 4}.000100"
AGENTS = ("lead", "worker-1", "worker-2")


async def opened(path: str = ":memory:") -> tuple[Engine, SQLiteStore]:
    """The world's engine and its open ledger, every event of the world ingested."""
    store = SQLiteStore(path)
    await store.open()
    engine = Engine(local_workspace(), store, VirtualClock(parse_time("2026-01-01T00:00:10Z")))
    bodies = [slack_body(slack_join(u)) for u in (LEAD, W1, W2)]
    dm = slack_message(
        f"{BASE + 1}.000100", "can you check the deploy?", channel="D0LEAD", channel_type="im"
    )
    bodies.append(slack_body(dm, via="lead"))
    bodies.append(slack_body(slack_message(f"{BASE + 2}.000100", "<!subteam^S0BACK> build is red")))
    bodies.append(slack_body(slack_message(f"{BASE + 3}.000100", "lunch anyone?", user=HUMAN2)))
    thanks = slack_message(f"{BASE + 4}.000100", "thanks!", channel="D0LEAD", channel_type="im")
    bodies.append(slack_body(thanks, via="lead"))
    await ingest_slack(engine, bodies)
    return engine, store


def port_scenario(
    test: Callable[[Engine, dict[str, EnginePort], SQLiteStore], Awaitable[None]],
    path: str = ":memory:",
) -> None:
    """Run `test` with the world's engine, each agent's port and the ledger."""

    async def run() -> None:
        engine, store = await opened(path)
        ports = {agent: EnginePort(engine, agent) for agent in AGENTS}
        async with asyncio.timeout(10):
            await test(engine, ports, store)
        await store.close()

    asyncio.run(run())
