"""A C2A harness for the live benchmark that never answers: it acknowledges every
`chat/deliver` and notes the event's id and the moment the request arrived.

    python bench/live_recorder.py OUT_FILE AGENT

Each line of OUT_FILE is `<agent> <eventId> <CLOCK_MONOTONIC seconds>`. On Linux that clock is
one for the whole machine, so the benchmark compares it with the fake server's write times.
Lines are written in batches every few milliseconds, so the recording costs the host nothing.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from harness_bridge.jsonrpc import Capabilities, ClientInfo
from harness_bridge.rpc import Connection
from harness_bridge.session import accept_initialize
from harness_bridge.transport import stdio_transport
from harness_bridge.wire import METHOD_DELIVER

FLUSH_EVERY_S = 0.05
EVERYTHING = Capabilities.model_validate(
    {
        "delivery": {"ack": True, "redelivery": True, "idempotency": True},
        "injection": dict.fromkeys(
            ("immediate", "buffered", "notify", "tool_mailbox", "digest"), True
        ),
    }
)


async def main(path: str, agent: str) -> None:
    connection = Connection(await stdio_transport(), name="host")
    accept_initialize(connection, ClientInfo(name="bench-recorder", version="0.0.1"), EVERYTHING)
    lines: list[str] = []

    async def deliver(params: dict[str, Any] | None) -> dict[str, Any]:
        lines.append(f"{agent} {(params or {}).get('eventId')} {time.monotonic():.6f}\n")
        return {"accepted": True, "duplicate": False}

    connection.on_request(METHOD_DELIVER, deliver)
    connection.start()
    with open(path, "a", encoding="utf-8") as out:
        while not connection.closed.is_set():
            await asyncio.sleep(FLUSH_EVERY_S)
            out.writelines(lines)
            out.flush()
            lines.clear()
        out.writelines(lines)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
