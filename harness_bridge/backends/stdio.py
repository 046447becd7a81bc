"""The `stdio` backend: any external C2A harness, in any language, as a subprocess.

The host starts the command, speaks the host side of the JSON-RPC link over its stdin and
stdout (`initialize`, then `chat/deliver` for every pending event in ledger order), and answers
the harness's `tools/list` and `tools/call` with the agent's chat tools on the same link. Each
line the harness writes to stderr becomes a log record (`harness_bridge.stderr_log`). When the
process exits, whatever it had not acknowledged stays pending and goes to the next process,
which `run` starts after a pause.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.agent_port import AgentPort
from core.deliveries import DeliveryPort
from harness_bridge.backends.environment import process_environment, variable_names
from harness_bridge.backends.registry import HarnessContext, validate
from harness_bridge.delivery import DELIVERY_WINDOW, Deliverer
from harness_bridge.jsonrpc import Capabilities, ClientInfo
from harness_bridge.link_tools import serve_tools
from harness_bridge.rpc import Connection
from harness_bridge.session import initialize
from harness_bridge.stderr_log import StderrLog
from harness_bridge.tools import ChatTools
from harness_bridge.transport import MAX_LINE, Closed, StreamTransport

__all__ = ["HOST_CAPABILITIES", "HOST_INFO", "StdioHarness", "StdioSettings", "from_settings"]

log = logging.getLogger(__name__)

HOST_INFO = ClientInfo(name="c2a-host", version="0.1.0")
HOST_CAPABILITIES = Capabilities.model_validate(
    {
        "delivery": {"ack": True, "redelivery": True, "idempotency": True},
        "injection": dict.fromkeys(
            ("immediate", "buffered", "notify", "tool_mailbox", "digest"), True
        ),
        "chatTools": dict.fromkeys(
            ("readThread", "sendMessage", "react", "reactionSignals", "claim", "defer", "resolve"),
            True,
        ),
        "utilities": {"progress": True, "cancellation": True, "logging": True},
    }
)


class StdioSettings(BaseModel):
    """`harness: {backend: stdio, command: [...], pass_env: [...], env: {...}}`: the process gets
    `harness_bridge.backends.environment`'s base, the `pass_env` variables and `env`;
    `deliveries_in_flight` bounds the `chat/deliver` requests awaiting the harness's answer at
    once (`DELIVERY_WINDOW`, 32, by default)."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["stdio"]
    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    pass_env: list[str] = Field(default_factory=list)
    restart_after_s: float = Field(default=2.0, ge=0)
    deliveries_in_flight: int = Field(default=DELIVERY_WINDOW, ge=1)

    _pass_env = field_validator("pass_env")(variable_names)


def from_settings(context: HarnessContext, settings: Mapping[str, Any]) -> StdioHarness:
    """The `c2a.backends` entry point: build the harness from a manifest's settings."""
    parsed = validate(StdioSettings, context.agent, settings)
    environ = process_environment(context.agent, context.host_environ, parsed.pass_env, parsed.env)
    return StdioHarness(
        context.port,
        context.deliveries,
        parsed.command,
        env=environ,
        restart_after=parsed.restart_after_s,
        window=parsed.deliveries_in_flight,
    )


class StdioHarness:
    """One agent's external harness process; its chat tools are `port`'s, and what it is told
    comes from `deliveries`."""

    def __init__(
        self,
        port: AgentPort,
        deliveries: DeliveryPort,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        restart_after: float = 2.0,
        window: int = DELIVERY_WINDOW,
    ) -> None:
        self.agent = port.agent
        self.port = port
        self.deliveries = deliveries
        self.command = list(command)
        # The process's whole environment; by default only the base (see `environment`).
        self.env = process_environment(self.agent, os.environ, (), {}) if env is None else dict(env)
        self.restart_after = restart_after
        self.window = window
        self.connection: Connection | None = None
        self.deliverer: Deliverer | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._stderr = StderrLog(self.agent)
        self._wake = asyncio.Event()

    async def start(self) -> Deliverer:
        """Start the process and open the session; returns the deliverer for its events."""
        process = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
            limit=MAX_LINE,
        )
        self._process = process
        if process.stdin is None or process.stdout is None or process.stderr is None:
            raise OSError("the harness process has no stdio pipes")  # they were asked for: never
        self._stderr.follow(process.stderr)
        connection = Connection(StreamTransport(process.stdout, process.stdin), name=self.agent)
        serve_tools(connection, ChatTools(self.port))
        connection.start()
        session = await initialize(connection, HOST_INFO, HOST_CAPABILITIES)
        log.info(
            "harness for %s: %s %s, protocol %s",
            self.agent,
            session.peer.name,
            session.peer.version,
            session.version,
        )
        self.connection = connection
        self.deliverer = Deliverer(
            self.agent, self.deliveries, connection, session, window=self.window, woken=self._wake
        )
        self.port.mark_available()
        return self.deliverer

    def wake(self) -> None:
        """New deliveries are pending for this agent."""
        self._wake.set()

    async def run(self) -> None:
        """Keep the harness running and its deliveries flowing until cancelled; a dead process
        marks the agent unavailable (people get `blocked`) until the next one is up."""
        while True:
            try:
                deliverer = await self.start()
                await deliverer.serve()
            except (Closed, ConnectionError, TimeoutError) as exc:
                log.warning("harness for %s stopped (%s); restarting", self.agent, exc)
            except OSError as exc:
                log.error("harness for %s cannot start: %s", self.agent, exc)
            self.port.mark_unavailable()
            await self.stop()
            await asyncio.sleep(self.restart_after)

    async def stop(self, wait: float = 5.0) -> None:
        """Close the link and end the process, waiting at most `wait` seconds before a kill."""
        if self.connection is not None:
            await self.connection.close()
            self.connection = None
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), wait)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        await self._stderr.aclose()
