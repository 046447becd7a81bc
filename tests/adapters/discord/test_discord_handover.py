"""`adapters.discord.handover`: frames handed over in order and several at once, and a session
mark kept only once its frame and every one before it are handled."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from adapters.discord.frames import Item
from adapters.discord.handover import AT_ONCE, KEEP_EVERY, HandOver
from core.store import GatewaySession


def mark(seq: int) -> GatewaySession:
    return GatewaySession("bot", -1, "session", "wss://gateway", seq, "2026-11-26T00:00:00Z")


def item(seq: int, *, frame: bool = True, catch_up: str | None = None) -> Item:
    return Item({"s": seq} if frame else None, mark(seq), catch_up)


class Host:
    """Records what is handed over; each frame's hand-over waits until it is released."""

    def __init__(self, *, failing: frozenset[int] = frozenset()) -> None:
        self.started: list[int] = []
        self.kept: list[int] = []
        self.caught_up: list[tuple[str, list[int]]] = []
        self.release: dict[int, asyncio.Event] = {}
        self.failing = failing
        self.frames: asyncio.Queue[Item] = asyncio.Queue()
        self.handing = HandOver(self.frames, self.hand_over, self.keep, self.catch_up)

    async def hand_over(self, frame: dict[str, Any]) -> bool:
        seq = frame["s"]
        self.started.append(seq)
        await self.release.setdefault(seq, asyncio.Event()).wait()
        return seq not in self.failing

    async def keep(self, session: GatewaySession) -> None:
        self.kept.append(session.seq)

    async def catch_up(self, since: str) -> None:
        self.caught_up.append((since, list(self.started)))

    def done(self, *seqs: int) -> None:
        for seq in seqs:
            self.release.setdefault(seq, asyncio.Event()).set()

    def queue(self, *seqs: int) -> None:
        for seq in seqs:
            self.frames.put_nowait(item(seq))

    async def handled(self, seq: int) -> None:
        """Queue frame `seq`, let it be committed, and wait until it is handled."""
        self.queue(seq)
        self.done(seq)
        await self.frames.join()


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


Scenario = Callable[[Host], Coroutine[Any, Any, None]]


def with_handing(scenario: Scenario, host: Host | None = None) -> None:
    """Run `scenario` with the host's frames being handed over, and stop that after."""

    async def main() -> None:
        handing = host or Host()
        task = asyncio.create_task(handing.handing.run())
        await settle()
        try:
            await scenario(handing)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())


def test_frames_start_in_order_before_the_first_is_committed() -> None:
    async def scenario(host: Host) -> None:
        host.queue(1, 2, 3)
        await settle()
        assert host.started == [1, 2, 3]  # all three handed over, none committed yet
        assert host.kept == []

    with_handing(scenario)


def test_a_mark_never_runs_ahead_of_an_unhandled_frame() -> None:
    async def scenario(host: Host) -> None:
        host.queue(1, 2, 3)
        await settle()
        host.done(2, 3)
        await settle()
        assert host.kept == []  # 1 is not in the ledger yet
        host.done(1)
        await host.frames.join()
        assert host.kept == [3]  # one write for the three, the newest mark

    with_handing(scenario)


def test_a_failed_frame_does_not_move_the_mark_and_the_next_one_does() -> None:
    async def scenario(host: Host) -> None:
        await host.handled(1)
        await host.handled(2)
        assert host.kept == [1]
        await host.handled(3)
        assert host.kept == [1, 3]

    with_handing(scenario, Host(failing=frozenset({2})))


def test_a_frame_the_normaliser_does_not_read_moves_the_mark() -> None:
    async def scenario(host: Host) -> None:
        host.frames.put_nowait(item(7, frame=False))
        await host.frames.join()
        assert (host.started, host.kept) == ([], [7])

    with_handing(scenario)


def test_under_steady_load_a_mark_is_kept_every_so_often() -> None:
    frames = 3 * KEEP_EVERY

    async def scenario(host: Host) -> None:
        host.done(*range(1, frames + 1))
        for seq in range(1, frames + 1):
            await host.frames.put(item(seq))  # the queue never runs dry
        await host.frames.join()
        assert host.kept[-1] == frames
        assert 3 <= len(host.kept) < frames // 4
        assert host.kept == sorted(host.kept)

    with_handing(scenario)


def test_at_most_at_once_frames_are_open() -> None:
    frames = range(1, AT_ONCE + 10)

    async def scenario(host: Host) -> None:
        host.queue(*frames)
        await settle()
        # the oldest, the window behind it, and one started as it waits for room
        assert len(host.started) == 1 + AT_ONCE + 1
        host.done(*frames)
        await host.frames.join()
        assert host.started == list(frames)

    with_handing(scenario)


def test_catching_up_waits_for_what_came_before_and_precedes_what_comes_after() -> None:
    async def scenario(host: Host) -> None:
        host.queue(1)
        host.frames.put_nowait(item(2, catch_up="2026-11-26T00:00:00Z"))
        host.queue(3)
        await settle()
        assert (host.started, host.caught_up) == ([1], [])
        host.done(1, 2, 3)
        await host.frames.join()
        assert host.caught_up == [("2026-11-26T00:00:00Z", [1])]
        assert host.started == [1, 2, 3]

    with_handing(scenario)
