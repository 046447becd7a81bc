"""Fuzz the Discord gateway boundary: whatever text arrives on a bot's socket, the live
connection's `take` raises nothing, finishes within the bound, and queues only dispatches with
a usable sequence number and session (the only things a RESUME could later be asked from)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import yarl
from bounds import timed
from hypothesis import given
from hypothesis import strategies as st

from adapters.discord.live import DiscordAgentConnection
from core.clock import VirtualClock

GUILD = "800000000000000001"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
names = st.sampled_from(["READY", "RESUMED", "MESSAGE_CREATE", "GUILD_CREATE", "TYPING_START"])
dispatches = st.fixed_dictionaries(
    {
        "op": st.sampled_from([0, 0.0, False, "0", 1, None]) | json_values,
        "t": names | json_values,
        "s": st.integers() | json_values,
        "d": st.fixed_dictionaries(
            {},
            optional={
                "session_id": json_values,
                "resume_gateway_url": json_values,
                "guild_id": st.just(GUILD) | json_values,
            },
        )
        | json_values,
    }
)
raw_text = dispatches.map(json.dumps) | json_values.map(json.dumps) | st.text(max_size=200)


class Socket:
    """What `take` reads of discord.py's socket: its shard, session and resume URL."""

    def __init__(self, shard_id: int | None, session_id: str | None) -> None:
        self.shard_id = shard_id
        self.session_id = session_id
        self.gateway = yarl.URL("wss://gateway.example/resume")


async def _never(platform: str, payload: Any, via: str | None) -> None:
    raise AssertionError("take only queues")


@given(
    raws=st.lists(raw_text, max_size=8),
    shard=st.none() | st.integers(0, 3),
    session=st.none() | st.text(max_size=10),
)
def test_any_gateway_text_is_taken_without_an_error(
    raws: list[str], shard: int | None, session: str | None
) -> None:
    async def scenario() -> None:
        connection = DiscordAgentConnection(
            "lead", "token", _never, guild_id=GUILD, clock=VirtualClock()
        )
        for raw in raws:
            timed("take", lambda raw=raw: connection.take(raw, Socket(shard, session)))
        while not connection._frames.empty():
            item = connection._frames.get_nowait()
            assert type(item.mark.seq) is int and 0 < item.mark.seq < 2**63
            assert isinstance(item.mark.session_id, str) and isinstance(item.mark.resume_url, str)
            assert item.frame is None or item.frame["s"] == item.mark.seq

    asyncio.run(scenario())
