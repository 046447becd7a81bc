"""Platform adapters: each translates native payloads into core events and never decides.

`Receive` is what every live adapter hands each native payload to: `receive(platform, payload,
via_agent)`, which must make the event durable before it returns (the adapter acknowledges the
platform only after). Calls started in order are committed in that order: the host queues the
event before its first suspension, so an adapter may start the next call before the last one
returned (tasks run in the order they are made) and still keep an edit after its message.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

__all__ = ["Receive"]

Receive = Callable[[str, Mapping[str, Any], str | None], Awaitable[Any]]
