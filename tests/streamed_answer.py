"""A long answer streamed through an agent's port on a virtual clock, for the tests of each
platform's streamed reply: the words as a model writes them, the pace they are fed at, and what
the page must show at the end."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from core.clock import VirtualClock
from core.engine import Engine
from core.engine_port import EnginePort
from harness_bridge.streamed_reply import EDIT_EVERY_S, StreamedReply
from harness_bridge.tools import ChatTools

__all__ = ["WORDS", "Redraws", "answer", "exact", "stream"]

WORDS = 3_000
WORD_EVERY_S = 0.05  # twenty words a second


def answer() -> list[str]:
    """A long answer as a model writes it, a word at a time, a paragraph every 40 words."""
    return [f"word{i}" + ("\n\n" if i % 40 == 39 else " ") for i in range(WORDS)]


def exact(texts: Iterable[str]) -> bool:
    """Whether the messages, in order, hold the whole answer and nothing else."""
    return "\n\n".join(texts).split() == "".join(answer()).split()


@dataclass
class Redraws:
    """When (on the virtual clock) each message was redrawn on the page."""

    times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def at(self, message: str, now: float) -> None:
        self.times[message].append(now)

    def paced(self, every: float = EDIT_EVERY_S) -> bool:
        """Whether no message was redrawn twice within `every` seconds."""
        return all(
            b - a >= every for times in self.times.values() for a, b in itertools.pairwise(times)
        )


async def stream(
    engine: Engine,
    event_id: str,
    clock: VirtualClock,
    drain: Callable[[], Awaitable[None]],
    *,
    limit: int | None,
    parts: int | None = WORDS,
) -> StreamedReply:
    """The lead's streamed answer to `event_id`, fed a word every `WORD_EVERY_S` seconds of
    `clock`; `drain` sends what the outbox holds (after each word, and whenever the reply
    waits). It may take `parts` messages before it goes as a file (None: the workspace's
    setting); by default as many as it needs."""

    def now() -> float:
        return clock.now().timestamp()

    async def later(seconds: float) -> None:
        clock.advance(timedelta(seconds=seconds))
        await drain()

    tools = ChatTools(EnginePort(engine, "lead"))
    reply = StreamedReply(
        tools, [event_id], live=True, limit=limit, parts=parts, now=now, sleep=later
    )
    for word in answer():
        await reply.add(word)
        await drain()
        clock.advance(timedelta(seconds=WORD_EVERY_S))
    await reply.finish("nothing")
    await drain()
    return reply
