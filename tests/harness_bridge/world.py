"""A small world for tool tests: three agents, a DM, a role mention, chatter and thanks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from builders import (
    HUMAN2,
    LEAD,
    W1,
    W2,
    local_workspace,
    slack_body,
    slack_join,
    slack_message,
)

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.engine import Engine
from core.sqlite_store import SQLiteStore
from harness_bridge.tools import ChatTools

BASE = 1767225600
DM = f"slack:T0LOCAL:D0LEAD:{BASE + 1}.000100"
ROLE = f"slack:T0LOCAL:C0GEN:{BASE + 2}.000100"
CHATTER = f"slack:T0LOCAL:C0GEN:{BASE + 3}.000100"
THANKS = f"slack:T0LOCAL:D0LEAD:{BASE + 4}.000100"


def scenario(
    test: Callable[[Engine, dict[str, ChatTools], SQLiteStore], Awaitable[None]],
    path: str = ":memory:",
) -> None:
    async def run() -> None:
        store = SQLiteStore(path)
        await store.open()
        engine = Engine(local_workspace(), store, VirtualClock(parse_time("2026-01-01T00:00:10Z")))
        bodies = [slack_body(slack_join(u)) for u in (LEAD, W1, W2)]
        bodies.append(
            slack_body(
                slack_message(
                    f"{BASE + 1}.000100",
                    "can you check the deploy?",
                    channel="D0LEAD",
                    channel_type="im",
                ),
                via="lead",
            )
        )
        bodies.append(
            slack_body(slack_message(f"{BASE + 2}.000100", "<!subteam^S0BACK> build is red"))
        )
        bodies.append(slack_body(slack_message(f"{BASE + 3}.000100", "lunch anyone?", user=HUMAN2)))
        bodies.append(
            slack_body(
                slack_message(f"{BASE + 4}.000100", "thanks!", channel="D0LEAD", channel_type="im"),
                via="lead",
            )
        )
        async with store.transaction():
            for body in bodies:
                event = normalise(body)
                assert event is not None
                await engine.ingest(event)
        tools = {agent: ChatTools(engine, agent) for agent in ("lead", "worker-1", "worker-2")}
        async with asyncio.timeout(10):
            await test(engine, tools, store)
        await store.close()

    asyncio.run(run())
