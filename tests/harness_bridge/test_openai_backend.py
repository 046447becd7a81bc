"""The built-in model loop against a scripted OpenAI-compatible server: the rules and the
event-id enum go out, unknown ids and malformed calls are answered and bounded, new events join
the running turn, and cancelling a turn aborts its request."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from builders import slack_body, slack_message
from fakes.openai_server import (
    FakeOpenAI,
    Reply,
    call,
    call_chunk,
    completion,
    hang,
    streamed,
    text_chunk,
)
from world import BASE, CHATTER, DM, THANKS, scenario

from adapters.slack import normalise
from core.engine import Engine
from core.errors import ModelRefusedTurn
from core.sqlite_store import SQLiteStore
from harness_bridge.backends import ModelError, OpenAIModelLoop, Progress, openai, record_failure
from harness_bridge.backends.openai import MAX_CALLS_PER_REPLY, trimmed
from harness_bridge.envelope import deliver_request
from harness_bridge.prompt import RESPONSE_RULES, render_turn
from harness_bridge.tools import TOOL_NAMES, ChatTools
from harness_bridge.turns import Turn
from harness_bridge.wire import parse_deliver

MADE_UP = "slack:T0LOCAL:D0LEAD:1700000000.000100"
FRAGMENT = f"slack:T0LOCAL:D0LEAD:{BASE + 5}.000100"


async def params_of(engine: Engine, event_id: str, agent: str = "lead") -> dict[str, Any]:
    (delivery,) = [d for d in await engine.store.deliveries(event_id) if d.decision.agent == agent]
    message = deliver_request(await engine.deliveries.delivery(delivery), compact=False, attempt=1)
    return dict(message["params"])


async def turn_of(engine: Engine, *event_ids: str) -> Turn:
    events = tuple([await params_of(engine, e) for e in event_ids])
    return Turn(engine.clock.now(), "immediate", events)


def reply_to(event_id: str, text: str) -> dict[str, Any]:
    return {"target": {"conversation": "D0LEAD"}, "text": text, "inReplyTo": event_id}


def sends(store: SQLiteStore) -> list[dict[str, Any]]:
    actions = [json.loads(a) for (a,) in store.db.execute("SELECT action FROM outbox")]
    return [a for a in actions if a["action"] == "send"]


def disposition(store: SQLiteStore, event_id: str) -> tuple[str | None, str | None]:
    row = store.db.execute(
        "SELECT disposition, disposition_reason FROM deliveries"
        " WHERE agent = 'lead' AND seq = (SELECT seq FROM events WHERE id = ?)",
        (event_id,),
    ).fetchone()
    return row[0], row[1]


def tool_answers(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def parameters(request: dict[str, Any], tool: str) -> dict[str, Any]:
    (spec,) = [t for t in request["tools"] if t["function"]["name"] == tool]
    return dict(spec["function"]["parameters"])


def test_the_first_request_carries_the_rules_and_an_enum_of_the_turns_event_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("C2A_TEST_MODEL_KEY", "sk-test")

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        first, second = await turn_of(engine, DM), await turn_of(engine, THANKS)
        script = [completion("Nothing to add."), completion(None)]
        async with (
            FakeOpenAI(script) as server,
            OpenAIModelLoop(
                server.base_url, "fake-model", tools["lead"], api_key_env="C2A_TEST_MODEL_KEY"
            ) as loop,
        ):
            done = await loop.run(first)
            assert (done.status, done.event_ids, done.text) == (
                "completed",
                (DM,),
                "Nothing to add.",
            )
            await loop.run(second)
        request = server.requests[0]
        assert request["model"] == "fake-model"
        assert request["messages"] == [
            {"role": "system", "content": RESPONSE_RULES},
            {"role": "user", "content": render_turn([parse_deliver(first.events[0])])},
        ]
        assert [t["function"]["name"] for t in request["tools"]] == list(TOOL_NAMES)
        assert all(t["type"] == "function" for t in request["tools"])
        send = parameters(request, "chat_send_message")
        assert send["properties"]["inReplyTo"]["enum"] == [DM]
        assert "inReplyTo" not in send.get("required", [])
        assert parameters(request, "chat_react")["properties"]["inReplyTo"]["enum"] == [DM]
        for tool in ("chat_claim", "chat_defer", "chat_resolve"):
            assert parameters(request, tool)["properties"]["eventId"]["enum"] == [DM]
        assert server.headers[0]["Authorization"] == "Bearer sk-test"
        # The session keeps its history: the second turn adds to it, with the rules once.
        later = server.requests[1]["messages"]
        assert [m["role"] for m in later] == ["system", "user", "assistant", "user"]
        assert parameters(server.requests[1], "chat_claim")["properties"]["eventId"]["enum"] == [
            THANKS
        ]

    scenario(test)


def test_a_made_up_event_id_is_refused_and_the_corrected_call_sends_once() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        script = [
            completion(calls=[call("chat_send_message", reply_to(MADE_UP, "Green."))]),
            completion(calls=[call("chat_send_message", reply_to(DM, "Green."), "call_2")]),
            completion("Done."),
        ]
        async with (
            FakeOpenAI(script) as server,
            OpenAIModelLoop(server.base_url, "fake-model", tools["lead"]) as loop,
        ):
            result = await loop.run(await turn_of(engine, DM))
        assert result.status == "completed" and result.failed == ()
        (refusal,) = tool_answers(server.requests[1])
        assert MADE_UP in refusal and f"the event ids of this turn are: {DM}" in refusal
        assert [(s["inReplyTo"], s["text"]) for s in sends(store)] == [(DM, "Green.")]
        assert disposition(store, DM)[0] == "responded"
        last = server.requests[2]["messages"]
        assert [m.get("tool_call_id") for m in last if m["role"] == "tool"] == ["call_1", "call_2"]

    scenario(test)


def test_a_malformed_call_retried_three_times_fails_the_turn_with_the_reason() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        script = [
            completion(calls=[call("chat_send_message", '{"text": "Green.",')]),
            completion(calls=[call("chat_send_mesage", reply_to(DM, "Green."))]),
            completion(calls=[call("chat_send_message", "[1, 2]")]),
            completion(calls=[call("chat_send_message", "[" * 100_000 + "]" * 100_000)]),
            completion("never asked for"),
        ]
        async with (
            FakeOpenAI(script) as server,
            OpenAIModelLoop(server.base_url, "fake-model", tools["lead"]) as loop,
        ):
            result = await loop.run(await turn_of(engine, DM))
        assert len(server.requests) == 4  # the first try and three retries
        assert result.status == "failed" and result.failed == (DM,)
        assert "4 malformed tool calls in a row" in result.reason
        assert "nested too deeply" in result.reason
        answers = [tool_answers(r)[-1] for r in server.requests[1:]]
        assert "not valid JSON" in answers[0]
        assert "unknown tool 'chat_send_mesage'" in answers[1]
        assert "one JSON object, not list" in answers[2]
        assert loop.sessions == {}
        assert await record_failure(tools["lead"].port, result) == [DM]
        assert disposition(store, DM) == ("failed", result.reason)
        assert sends(store) == []

    scenario(test)


def test_a_runaway_reply_runs_its_first_calls_and_the_model_is_told_of_the_rest() -> None:
    """A small model repeating a read until its tokens run out (or a server writing thousands
    of calls): the first `MAX_CALLS_PER_REPLY` run, the rest are left out of the session."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        reads = [call("chat_list_events", {}, f"c{n}") for n in range(1000)]
        script = [completion(calls=reads), completion("Nothing new.")]
        async with (
            FakeOpenAI(script) as server,
            OpenAIModelLoop(server.base_url, "fake-model", tools["lead"]) as loop,
        ):
            result = await loop.run(await turn_of(engine, DM))
        assert result.status == "completed"
        second = server.requests[1]["messages"]
        assert len(second[-MAX_CALLS_PER_REPLY - 2]["tool_calls"]) == MAX_CALLS_PER_REPLY
        assert [m["role"] for m in second[-MAX_CALLS_PER_REPLY - 1 :]] == [
            *["tool"] * MAX_CALLS_PER_REPLY,
            "user",
        ]
        assert second[-1]["content"].startswith("984 more tool calls of your last reply")
        audited = store.db.execute("SELECT count(*) FROM audit").fetchone()[0]
        assert audited == MAX_CALLS_PER_REPLY

    scenario(test)


def test_a_fragment_arriving_between_model_calls_joins_the_running_turn() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        thinking = asyncio.Event()
        script = [
            completion(
                calls=[call("chat_send_message", reply_to(DM, "Checking."))], after=thinking
            ),
            completion(calls=[call("chat_send_message", reply_to(FRAGMENT, "Both."), "call_2")]),
            completion("Done."),
        ]
        async with (
            FakeOpenAI(script) as server,
            OpenAIModelLoop(server.base_url, "fake-model", tools["lead"]) as loop,
        ):
            running = asyncio.create_task(loop.run(await turn_of(engine, DM)))
            await server.wait_requests(1)
            body = slack_message(
                f"{BASE + 5}.000100",
                "and the db migration",
                channel="D0LEAD",
                channel_type="im",
            )
            event = normalise(slack_body(body, via="lead"))
            assert event is not None
            async with store.transaction():
                await engine.ingest(event)
            assert loop.inject(await params_of(engine, FRAGMENT))
            assert not loop.inject(await params_of(engine, CHATTER))  # another conversation
            thinking.set()
            result = await running
        assert result.status == "completed" and result.event_ids == (DM, FRAGMENT)
        second = server.requests[1]["messages"]
        assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "user"]
        assert second[-1]["content"] == render_turn(
            [parse_deliver(await params_of(engine, FRAGMENT))]
        )
        assert "│ and the db migration" in second[-1]["content"]
        enum = parameters(server.requests[1], "chat_send_message")["properties"]["inReplyTo"]
        assert enum["enum"] == [DM, FRAGMENT]
        assert [s["inReplyTo"] for s in sends(store)] == [DM, FRAGMENT]

    scenario(test)


def test_cancelling_a_turn_aborts_the_request_and_keeps_no_session() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        turn = await turn_of(engine, DM)
        async with (
            FakeOpenAI([hang()]) as server,
            OpenAIModelLoop(server.base_url, "fake-model", tools["lead"]) as loop,
        ):
            running = asyncio.create_task(loop.run(turn))
            await server.wait_requests(1)
            running.cancel()
            async with asyncio.timeout(1):
                with pytest.raises(asyncio.CancelledError):
                    await running
            await server.wait_closed(0)
            assert loop.sessions == {}
            assert not loop.inject(turn.events[0])  # no turn is left running
        assert disposition(store, DM) == (None, None)

    scenario(test)


def test_a_server_error_raises_and_leaves_the_events_pending() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        async with (
            FakeOpenAI([]) as server,
            OpenAIModelLoop(server.base_url, "fake-model", tools["lead"]) as loop,
        ):
            with pytest.raises(ModelError, match="HTTP 500"):
                await loop.run(await turn_of(engine, DM))
            assert loop.sessions == {}
        assert disposition(store, DM) == (None, None)

    scenario(test)


@pytest.mark.parametrize(
    ("status", "body", "refused"),
    [
        (400, {"error": {"message": "the request exceeds the context size"}}, True),
        (413, {"error": "too large"}, True),
        (200, {"no": "choices"}, True),
        (200, "[" * 100_000 + "]" * 100_000, True),  # nested past what a reader follows
        (503, {"error": "loading model"}, False),
        (401, {"error": "bad key"}, False),
    ],
)
def test_a_request_the_server_refuses_is_told_from_a_server_that_is_not_there(
    status: int, body: dict[str, Any] | str, refused: bool
) -> None:
    """`ModelRefusedTurn` (this turn: tried a few times, then failed) only when the server
    answered and refused this request or answered no completion; an error that says the
    server is not there for anyone stays a plain `ModelError` (tried until it is back)."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        async with (
            FakeOpenAI(
                [Reply(body=body, status=status) if isinstance(body, dict) else Reply(raw=body)]
            ) as server,
            OpenAIModelLoop(server.base_url, "fake-model", tools["lead"]) as loop,
        ):
            with pytest.raises(ModelError) as raised:
                await loop.run(await turn_of(engine, DM))
        assert isinstance(raised.value, ModelRefusedTurn) is refused

    scenario(test)


class NoTools:
    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("no tool runs here")


def test_a_missing_api_key_variable_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("C2A_TEST_NO_KEY", raising=False)
    with pytest.raises(ModelError, match="C2A_TEST_NO_KEY"):
        OpenAIModelLoop("http://127.0.0.1:9/v1", "m", NoTools(), api_key_env="C2A_TEST_NO_KEY")


def test_a_streamed_reply_becomes_progress_and_its_pieced_tool_call_runs() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        arguments = json.dumps(reply_to(DM, "Deploy is green."))
        script = [
            streamed(
                text_chunk("Looking"),
                text_chunk(" now."),
                call_chunk(0, "call_9", "chat_send_message", arguments[:20]),
                call_chunk(0, arguments=arguments[20:]),
            ),
            streamed(text_chunk("Done.")),
        ]
        seen: list[Progress] = []

        async def progress(update: Progress) -> None:
            seen.append(update)

        async with (
            FakeOpenAI(script) as server,
            OpenAIModelLoop(
                server.base_url, "fake-model", tools["lead"], stream=True, on_progress=progress
            ) as loop,
        ):
            result = await loop.run(await turn_of(engine, DM))
        assert server.requests[0]["stream"] is True
        assert result.status == "completed" and result.text == "Done."
        assert [(p.text, p.tool) for p in seen] == [
            ("Looking", None),
            (" now.", None),
            ("", "chat_send_message"),
            ("Done.", None),
        ]
        assert all(p.event_ids == (DM,) for p in seen)
        assert [s["text"] for s in sends(store)] == ["Deploy is green."]
        (assistant,) = [m for m in server.requests[1]["messages"] if m["role"] == "assistant"]
        assert assistant["content"] == "Looking now."
        assert assistant["tool_calls"][0]["id"] == "call_9"

    scenario(test)


def test_a_session_keeps_its_rules_and_its_newest_whole_turns() -> None:
    """What a session carries into its next turn is bounded; it always starts with the rules,
    and it is cut only where a turn's events begin, never between a call and its result."""
    system = {"role": "system", "content": RESPONSE_RULES}
    older = [
        {"role": "user", "content": "x" * 300},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "y" * 300},
        {"role": "assistant", "content": "done"},
    ]
    newer = [{"role": "user", "content": "what now?"}, {"role": "assistant", "content": "this"}]
    assert trimmed([system, *older, *newer], most=10_000) == [system, *older, *newer]
    assert trimmed([system, *older, *newer], most=500) == [system, *newer]
    assert trimmed([system, *older, *newer], most=10) == [system]


def test_a_loop_of_many_conversations_keeps_the_most_lately_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(openai, "SESSIONS_KEPT", 1)

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        dm, channel = await turn_of(engine, DM), await turn_of(engine, CHATTER)
        script = [completion("One."), completion("Two."), completion("Three.")]
        async with (
            FakeOpenAI(script) as server,
            OpenAIModelLoop(server.base_url, "fake-model", tools["lead"]) as loop,
        ):
            for turn in (dm, channel, dm):
                await loop.run(turn)
            assert list(loop.sessions) == ["slack:D0LEAD"]
        # The DM's history was forgotten for the channel's: its third turn starts afresh.
        assert [m["role"] for m in server.requests[2]["messages"]] == ["system", "user"]

    scenario(test)
