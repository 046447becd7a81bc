"""A harness process's stderr as log records: one INFO record a line on the logger
`c2a.harness.<agent>`, never the raw stream, so the host's log keeps one format (text or JSON
lines) and its handlers and filters see every line.

Lines are read as fast as they come, so a flood never blocks the harness on a full pipe; each is
cut at `STDERR_LINE` bytes, and control characters are escaped (`\\x1b`, `\\r`), so a line can
neither forge another log line nor drive a terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re

from harness_bridge.transport import Closed, read_line

__all__ = ["STDERR_LINE", "StderrLog"]

STDERR_LINE = 8 * 1024
"""The longest stderr line logged, in bytes; the rest of a longer line is dropped."""

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")  # C0 and C1 controls but tab


class StderrLog:
    """Follows one process's stderr (`follow`), until it ends or `aclose` is called."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.log = logging.getLogger(f"c2a.harness.{agent}")
        self._task: asyncio.Task[None] | None = None

    def follow(self, stream: asyncio.StreamReader) -> None:
        """Log `stream` line by line in a task of its own, until the end of the stream."""
        self._task = asyncio.create_task(self._pump(stream), name=f"stderr-{self.agent}")

    async def aclose(self, grace: float = 1.0) -> None:
        """Stop following: wait up to `grace` seconds for the last lines of a process that has
        ended (its stream ends with it), then stop reading."""
        task, self._task = self._task, None
        if task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), grace)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    async def _pump(self, stream: asyncio.StreamReader) -> None:
        with contextlib.suppress(Closed):
            while True:
                line, cut = await read_line(stream, STDERR_LINE)
                text = _CONTROL.sub(_escaped, line.decode("utf-8", errors="replace")).rstrip()
                if text:
                    more = " … (line cut)" if cut else ""
                    self.log.info("harness %s: %s%s", self.agent, text, more)
                await asyncio.sleep(0)  # a flood of buffered lines must not starve the host


def _escaped(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")
