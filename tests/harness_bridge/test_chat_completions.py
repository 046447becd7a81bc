"""Reading a model server's completions, streamed or not: whatever shape an answer has, it is
a reply, or a `ModelRefusedTurn` saying what is wrong with it, never another exception (which
would end the turn as a crash)."""

from __future__ import annotations

from typing import Any

import pytest

from core.errors import ModelRefusedTurn
from harness_bridge.backends.chat_completions import (
    ModelReply,
    RawCall,
    StreamAssembler,
    parse_completion,
)


def message(**fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", **fields}}]}


def chunk(**delta: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta}]}


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"no": "choices"}, "no choices"),
        (message(tool_calls=5), "tool_calls is not a list"),
        (message(tool_calls="chat_send_message"), "tool_calls is not a list"),
    ],
)
def test_an_answer_of_no_readable_shape_is_a_refused_turn(body: Any, why: str) -> None:
    with pytest.raises(ModelRefusedTurn, match=why):
        parse_completion(body)


def test_odd_calls_are_read_as_calls_the_loop_can_answer_as_malformed() -> None:
    body = message(content=None, tool_calls=[{"function": "chat_react"}, 7])
    assert parse_completion(body) == ModelReply(
        "", (RawCall("call_0", "", None), RawCall("call_1", "", None))
    )


@pytest.mark.parametrize(
    ("chunks", "why"),
    [
        ([{"choices": "all"}], "no choices"),
        ([chunk(tool_calls=7)], "tool_calls is not a list"),
        ([chunk(tool_calls=[{"index": [1]}])], "index is not a number"),
        ([chunk(tool_calls=[{"index": 0}]), chunk(tool_calls=[{"index": "0"}])], "index is not"),
    ],
)
def test_a_stream_of_no_readable_shape_is_a_refused_turn(
    chunks: list[dict[str, Any]], why: str
) -> None:
    assembler = StreamAssembler()
    for piece in chunks[:-1]:
        assembler.feed(piece)
    with pytest.raises(ModelRefusedTurn, match=why):
        assembler.feed(chunks[-1])


def test_a_streamed_call_is_joined_by_its_index_whatever_else_its_pieces_hold() -> None:
    assembler = StreamAssembler()
    pieces = [
        chunk(content="Looking"),
        chunk(tool_calls=[{"index": 0, "id": "c", "function": {"name": "chat_"}}]),
        chunk(tool_calls=[{"index": 0, "function": "not an object"}]),
        chunk(tool_calls=[{"index": 0, "function": {"name": "react", "arguments": "{}"}}]),
    ]
    assert [assembler.feed(piece) for piece in pieces] == ["Looking", "", "", ""]
    assert assembler.reply() == ModelReply("Looking", (RawCall("c", "chat_react", "{}"),))
