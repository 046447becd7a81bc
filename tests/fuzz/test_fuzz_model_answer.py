"""Fuzz: a model's answer entering the host. Whatever a model writes as a turn's final text, or
as the arguments of `chat_send_message` and `chat_react` (targets as ids, conversation objects
or junk), the chat tools either act or refuse with the project's own error (`ToolError`, a
`C2AError`), each call within the bound; and what they queue is never an answer the policy
forbids."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Iterator
from datetime import timedelta
from typing import Any, TypeVar

import pytest
from bounds import bounded
from builders import ingest_slack, local_workspace, slack_body, slack_message
from hypothesis import given
from hypothesis import strategies as st

from core.clock import VirtualClock, parse_time
from core.engine import Engine
from core.engine_port import EnginePort
from core.errors import C2AError
from core.sqlite_store import SQLiteStore
from harness_bridge.tools import ChatTools

BASE = 1767225600
DM = f"slack:T0LOCAL:D0LEAD:{BASE + 1}.000100"
THANKS = f"slack:T0LOCAL:D0LEAD:{BASE + 2}.000100"
CHATTER = f"slack:T0LOCAL:C0GEN:{BASE + 3}.000100"
IDS = (DM, THANKS, CHATTER, "slack:T0LOCAL:D0LEAD:nope", "")

T = TypeVar("T")


class World:
    """One ledger with a DM, a thanks and chatter for the lead, on its own event loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.clock = VirtualClock(parse_time("2026-01-01T00:00:10Z"))
        self.store = SQLiteStore(":memory:")
        self.engine = self.run(self._open())

    async def _open(self) -> Engine:
        await self.store.open()
        engine = Engine(local_workspace(), self.store, self.clock)
        messages = [
            slack_message(f"{BASE + 1}.000100", "can you check the deploy?", channel="D0LEAD"),
            slack_message(f"{BASE + 2}.000100", "thanks!", channel="D0LEAD"),
        ]
        bodies = [slack_body({**m, "channel_type": "im"}, via="lead") for m in messages]
        bodies.append(slack_body(slack_message(f"{BASE + 3}.000100", "lunch anyone?")))
        await ingest_slack(engine, bodies)
        return engine

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(work)

    def close(self) -> None:
        self.run(self.store.close())
        self.loop.close()


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    built = World()
    yield built
    built.close()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=10,
)
conversation_objects = st.fixed_dictionaries(
    {"id": st.sampled_from(["D0LEAD", "C0GEN", ""]) | st.text(max_size=20)},
    optional={
        "kind": st.sampled_from(["dm", "channel"]) | json_values,
        "threadId": st.none() | st.text(max_size=12) | json_values,
    },
)
targets = st.one_of(
    json_values,
    conversation_objects,
    st.fixed_dictionaries(
        {"conversation": st.sampled_from(["D0LEAD", "C0GEN"]) | conversation_objects | json_values},
        optional={"thread": st.none() | st.text(max_size=12) | json_values},
    ),
)
texts = st.text(max_size=300) | st.sampled_from(["", "   ", "<|im_end|>", "a" * 50_000])


def policy_allows(store: SQLiteStore) -> None:
    """Nothing queued answers the chatter, which is must_not_respond for the lead."""
    rows = store.db.execute(
        "SELECT COUNT(*) FROM outbox WHERE agent = 'lead' AND action LIKE ?", (f"%{CHATTER}%",)
    ).fetchone()
    assert rows[0] == 0


@given(
    target=targets,
    text=texts | json_values,
    reply_to=st.none() | st.sampled_from(IDS) | json_values,
)
def test_a_send_the_model_writes_is_done_or_refused(
    world: World, target: Any, text: Any, reply_to: Any
) -> None:
    world.clock.advance(timedelta(minutes=1))  # the send budget is not what is tested here
    tools = ChatTools(EnginePort(world.engine, "lead"))
    arguments = {"target": target, "text": text, "inReplyTo": reply_to}
    with bounded("chat_send_message"), contextlib.suppress(C2AError):
        world.run(tools.call("chat_send_message", arguments))
    policy_allows(world.store)


@given(reply_to=st.sampled_from(IDS) | json_values, signal=st.text(max_size=10) | json_values)
def test_a_reaction_the_model_writes_is_done_or_refused(
    world: World, reply_to: Any, signal: Any
) -> None:
    tools = ChatTools(EnginePort(world.engine, "lead"))
    for name in (signal, "done", "working", "agree"):
        with bounded("chat_react"), contextlib.suppress(C2AError):
            world.run(tools.call("chat_react", {"inReplyTo": reply_to, "signal": name}))
    policy_allows(world.store)


@given(text=texts, ids=st.lists(st.sampled_from(IDS), max_size=4))
def test_a_turns_final_text_is_a_reply_or_nothing(world: World, text: str, ids: list[str]) -> None:
    world.clock.advance(timedelta(minutes=1))
    tools = ChatTools(EnginePort(world.engine, "lead"))
    with bounded("reply_with_text"):
        try:
            result = world.run(tools.reply_with_text(ids, text))
        except C2AError:
            result = None
    if result is not None:
        assert DM in ids and text.strip()
    policy_allows(world.store)
