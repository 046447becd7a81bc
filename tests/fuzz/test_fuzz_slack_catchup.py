"""Fuzz the Slack history boundary: whatever `conversations.history` and `conversations.replies`
answer, the catch-up raises nothing, finishes within the bound, and hands the host only
`event_callback` bodies of messages with a well-formed `ts` newer than the ledger's; the host
takes each in or quarantines it."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from bounds import bounded
from builders import TEAM, local_workspace, slack_body, slack_message
from hypothesis import given
from hypothesis import strategies as st

from adapters.slack.catchup import catch_up
from c2a.host import Host
from core.clock import VirtualClock
from core.emission import Emission
from core.sqlite_store import SQLiteStore

SEEN_TS = "1767225600.000100"  # the ledger's newest message in C0GEN
NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
TS = re.compile(r"[0-9]{1,12}\.[0-9]{1,6}")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
good_stamps = st.sampled_from(["1767225700.000001", "1767226000.5", "1767226199.999999"])
stamps = (
    good_stamps
    | st.sampled_from(
        ["1767225600.000100", "1767224000.1", "9" * 12 + ".999999", "x.1", "", "1.2.3"]
    )
    | st.from_regex(TS, fullmatch=True)
)
messages = st.fixed_dictionaries(
    {"ts": stamps},
    optional={
        "type": st.just("message") | json_values,
        "thread_ts": good_stamps | stamps | json_values,
        "reply_count": st.integers(0, 3) | json_values,
        "user": st.sampled_from(["U0ALICE", "U0LEAD"]) | json_values,
        "text": st.text(max_size=40) | json_values,
        "subtype": st.sampled_from(["bot_message", "message_changed", "channel_join"])
        | json_values,
        "event_ts": json_values,
    },
)
pages = st.fixed_dictionaries(
    {"messages": st.lists(messages | json_values, max_size=5)},
    optional={
        "ok": st.booleans(),
        "has_more": st.booleans() | json_values,
        "response_metadata": st.fixed_dictionaries(
            {}, optional={"next_cursor": st.sampled_from(["", "next", "again"]) | json_values}
        )
        | json_values,
    },
)


class Client:
    """Answers every read with the next of `answers`, round and round."""

    def __init__(self, answers: list[Any]) -> None:
        self._answers = itertools.cycle(answers or [{}])

    async def api_call(
        self, method: str, *, http_verb: str, params: Mapping[str, Any]
    ) -> SimpleNamespace:
        return SimpleNamespace(data=next(self._answers))


@given(answers=st.lists(pages | json_values, max_size=4))
def test_any_history_answer_is_read_without_an_error(answers: list[Any]) -> None:
    handed: list[Mapping[str, Any]] = []

    async def scenario() -> None:
        async def sink(emissions: list[Emission]) -> None:
            return None

        workspace = local_workspace()
        host = Host(workspace, SQLiteStore(":memory:"), VirtualClock(NOW), sink)
        await host.start()
        await host.receive("slack", slack_body(slack_message(SEEN_TS, "hi"), via="lead"), "lead")

        async def receive(platform: str, payload: Mapping[str, Any], via: str | None) -> Any:
            handed.append(payload)
            return await host.receive(platform, payload, via)

        clients: Any = {"lead": Client(answers)}
        with bounded("catch_up"):
            await catch_up(workspace, clients, receive, host.store, now=NOW)
        await host.close()

    asyncio.run(scenario())
    for body in handed:
        assert body["type"] == "event_callback" and body["team_id"] == TEAM
        ts = body["event"]["ts"]
        assert isinstance(ts, str) and TS.fullmatch(ts)
        assert float(ts) > float(SEEN_TS)  # nothing the ledger already had
        assert float(ts) > (NOW - timedelta(minutes=30)).timestamp()  # inside the window
