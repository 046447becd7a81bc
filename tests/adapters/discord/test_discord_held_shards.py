"""Which shards a process offers to the run's leases: every shard of every bot under
`discord:<agent>:shard:<n>` (a plain bot is shard 0), each connecting that one shard alone, and
all of them withdrawn on close. The leases here record the offers and grant none."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from adapters.discord.bots import Bots
from adapters.discord.held_shards import HeldShards, shard_lease
from adapters.discord.sharding import IDENTIFY_EVERY, IdentifyTurns, Sharding
from core.clock import VirtualClock


class Offers:
    """Leases that record what is offered and withdrawn, and grant nothing."""

    def __init__(self) -> None:
        self.offered: list[str] = []
        self.withdrawn: list[str] = []

    async def offer(
        self, name: str, start: Callable[[], Awaitable[None]], stop: Callable[[], Awaitable[None]]
    ) -> None:
        self.offered.append(name)

    async def withdraw(self, name: str) -> None:
        self.withdrawn.append(name)


async def _nothing(platform: str, payload: object, via: str | None) -> None:
    return None


def offered(sharding: Sharding | None) -> Offers:
    bots = Bots(
        {"lead": "lead-token", "worker-1": "w1-token"},
        sharding,
        None,
        _nothing,
        0.05,
        None,
        VirtualClock(),
        None,
    )
    offers = Offers()

    async def scenario() -> None:
        shards = HeldShards(bots, offers)
        await shards.offer()
        assert shards.connections == {}  # none granted: nothing connects
        await shards.close()

    asyncio.run(scenario())
    return offers


def test_each_shard_of_each_bot_is_offered_under_its_own_lease() -> None:
    offers = offered(Sharding(3))
    assert offers.offered == [shard_lease(a, n) for a in ("lead", "worker-1") for n in range(3)]
    assert offers.withdrawn == offers.offered
    assert shard_lease("lead", 2) == "discord:lead:shard:2"


def test_only_the_manifests_shard_ids_are_offered() -> None:
    assert offered(Sharding(4, (1, 3))).offered == [
        "discord:lead:shard:1",
        "discord:lead:shard:3",
        "discord:worker-1:shard:1",
        "discord:worker-1:shard:3",
    ]


def test_a_plain_bot_is_one_shard() -> None:
    assert offered(None).offered == ["discord:lead:shard:0", "discord:worker-1:shard:0"]


def test_one_bots_identifies_take_turns_five_seconds_apart() -> None:
    clock = {"now": 100.0}
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)
        clock["now"] += seconds

    turns = IdentifyTurns(now=lambda: clock["now"], sleep=sleep)

    async def scenario() -> None:
        await turns.take()  # the first goes at once
        clock["now"] += 2.0
        await asyncio.gather(turns.take(), turns.take())  # then one at a time, 5 s apart
        clock["now"] += 60.0
        await turns.take()  # long after the last: at once

    asyncio.run(scenario())
    assert waited == [IDENTIFY_EVERY - 2.0, IDENTIFY_EVERY]
