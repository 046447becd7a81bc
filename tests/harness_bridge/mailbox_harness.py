"""A C2A harness over stdio for tests, with a durable mailbox file.

Usage: python mailbox_harness.py MAILBOX.sqlite3 [CRASH_AT]: with CRASH_AT=k it kills itself
with SIGKILL right after storing the k-th new event, before acknowledging it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

from harness_bridge.jsonrpc import Capabilities, ClientInfo
from harness_bridge.mailbox import Mailbox, serve_mailbox
from harness_bridge.rpc import Connection
from harness_bridge.session import accept_initialize
from harness_bridge.transport import stdio_transport

EVERYTHING = Capabilities.model_validate(
    {
        "delivery": {"ack": True, "redelivery": True, "idempotency": True},
        "injection": dict.fromkeys(
            ("immediate", "buffered", "notify", "tool_mailbox", "digest"), True
        ),
    }
)


async def main(path: str, crash_at: int | None) -> None:
    connection = Connection(await stdio_transport(), name="host")
    accept_initialize(connection, ClientInfo(name="mailbox-harness", version="0.0.1"), EVERYTHING)
    mailbox = Mailbox(path)
    stored = 0

    def on_new(params: dict[str, Any]) -> None:
        nonlocal stored
        stored += 1
        if stored == crash_at:
            os.kill(os.getpid(), signal.SIGKILL)

    serve_mailbox(connection, mailbox, on_new=on_new)
    connection.start()
    await connection.closed.wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else None))
