"""Before a workspace's run connects anything: can each agent's harness start? A model server
that does not answer or a command that is not installed is one `HarnessUnreachable` line saying
what to do, instead of a harness that dies later."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Mapping
from urllib.parse import urlsplit

from core.errors import C2AError
from core.manifest import AgentConfig

__all__ = ["PROBE_TIMEOUT", "HarnessUnreachable", "probe_harnesses"]

PROBE_TIMEOUT = 3.0


class HarnessUnreachable(C2AError):
    """An agent's harness cannot be started: its model server does not answer, or its
    command is not installed."""

    code = "harness_unreachable"


async def probe_harnesses(configured: Mapping[str, AgentConfig]) -> None:
    """Raise HarnessUnreachable for the first of `configured`'s harnesses that cannot run."""
    for agent, config in configured.items():
        settings = config.harness.settings() if config.harness else {}
        if isinstance(settings.get("base_url"), str):
            await _probe_url(agent, settings["base_url"])
        command = settings.get("command")
        program = command[0] if isinstance(command, list) and command else None
        if isinstance(program, str) and shutil.which(program) is None:
            raise HarnessUnreachable(
                f"agents.{agent}.harness.command: {program!r} is not installed or "
                "not on PATH; install it or fix the command"
            )


async def _probe_url(agent: str, url: str) -> None:
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            _, writer = await asyncio.open_connection(host, port)
    except (OSError, TimeoutError):
        raise HarnessUnreachable(
            f"agents.{agent}.harness.base_url: nothing answers at {url}; start the model "
            "server (for example `ollama serve`) or fix base_url"
        ) from None
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
