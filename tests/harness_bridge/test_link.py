"""The JSON-RPC link: correlation, notifications, timeouts, bad lines, and `initialize`."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from core.decision import InjectionMode
from harness_bridge.jsonrpc import (
    COMPACT_VIEW,
    FULL_ENVELOPE,
    Capabilities,
    ClientInfo,
    JsonRpcRequest,
    JsonRpcResponse,
)
from harness_bridge.rpc import (
    INVALID_REQUEST,
    MAX_IN_FLIGHT,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    SERVER_BUSY,
    Connection,
    MalformedResponse,
    RpcError,
)
from harness_bridge.session import Session, SessionError, accept_initialize, initialize
from harness_bridge.transport import Closed, MemoryTransport, StreamTransport

HOST = ClientInfo(name="c2a-host", version="0.1.0")
HARNESS = ClientInfo(name="test-harness", version="0.0.1")
ROOT = Path(__file__).resolve().parents[2]


def caps(**groups: dict[str, bool]) -> Capabilities:
    return Capabilities.model_validate(groups)


ALL = caps(
    delivery={"ack": True, "redelivery": True, "idempotency": True},
    injection=dict.fromkeys(("immediate", "buffered", "notify", "tool_mailbox", "digest"), True),
)


def linked(test: Callable[[Connection, Connection], Awaitable[None]]) -> None:
    async def run() -> None:
        a, b = MemoryTransport.pair()
        host, harness = Connection(a, name="harness"), Connection(b, name="host")
        try:
            async with asyncio.timeout(5):
                await test(host, harness)
        finally:
            await host.close()
            await harness.close()

    asyncio.run(run())


def test_concurrent_requests_get_their_own_answers_even_out_of_order() -> None:
    async def test(host: Connection, harness: Connection) -> None:
        release = asyncio.Event()

        async def slow(params: dict[str, Any] | None) -> Any:
            await release.wait()
            return {"slow": params}

        async def fast(params: dict[str, Any] | None) -> Any:
            release.set()
            return {"fast": params}

        harness.on_request("slow", slow)
        harness.on_request("fast", fast)
        host.start()
        harness.start()
        slow_answer = asyncio.create_task(host.request("slow", {"n": 1}))
        await asyncio.sleep(0)
        assert await host.request("fast", {"n": 2}) == {"fast": {"n": 2}}
        assert await slow_answer == {"slow": {"n": 1}}

    linked(test)


def test_a_flood_of_valid_calls_is_answered_busy_beyond_the_in_flight_bound() -> None:
    async def test(host: Connection, harness: Connection) -> None:
        release = asyncio.Event()
        started = 0

        async def slow(params: dict[str, Any] | None) -> Any:
            nonlocal started
            started += 1
            await release.wait()
            return "done"

        harness.on_request("slow", slow)
        host.start()
        harness.start()
        calls = [asyncio.create_task(host.request("slow")) for _ in range(MAX_IN_FLIGHT + 5)]
        answers = await asyncio.wait_for(
            asyncio.gather(*calls[MAX_IN_FLIGHT:], return_exceptions=True), 2
        )
        assert started == MAX_IN_FLIGHT, "no more handlers run at once than the bound"
        assert all(isinstance(a, RpcError) and a.rpc_code == SERVER_BUSY for a in answers)
        release.set()
        assert await asyncio.gather(*calls[:MAX_IN_FLIGHT]) == ["done"] * MAX_IN_FLIGHT
        assert await host.request("slow") == "done", "the link serves again once calls end"

    linked(test)


def test_notifications_reach_their_handler_and_get_no_answer() -> None:
    async def test(host: Connection, harness: Connection) -> None:
        seen: asyncio.Queue[Any] = asyncio.Queue()

        async def progress(params: dict[str, Any] | None) -> None:
            await seen.put(params)

        host.on_notification("notifications/progress", progress)
        host.start()
        harness.start()
        await harness.notify("notifications/progress", {"progress": 1})
        assert await seen.get() == {"progress": 1}

    linked(test)


def test_a_bad_line_is_reported_as_a_value_and_the_loop_goes_on() -> None:
    async def run() -> None:
        a, b = MemoryTransport.pair()
        harness = Connection(b, name="host")

        async def echo(params: dict[str, Any] | None) -> Any:
            return params

        harness.on_request("echo", echo)
        harness.start()
        async with asyncio.timeout(5):
            for line, code in [(b"{this is not json", PARSE_ERROR), (b"[1, 2]", INVALID_REQUEST)]:
                await a.send_raw(line)
                answer = await a.receive()
                assert isinstance(answer, JsonRpcResponse) and answer.error is not None
                assert answer.error.code == code and answer.id is None
            await a.send({"jsonrpc": "2.0", "id": 7, "method": "echo", "params": {"ok": True}})
            assert await a.receive() == JsonRpcResponse(id=7, result={"ok": True})
        first, second = (line.reason for line in harness.bad_lines)
        assert first.startswith("not JSON (") and first.endswith("at column 2)")
        assert second == "batch messages are not supported"
        await harness.close()
        await a.close()

    asyncio.run(run())


@pytest.mark.parametrize(
    "answer",
    [
        {"error": {"code": "E1", "message": "no"}},
        {"error": {"code": True, "message": "no"}},
        {"error": {"code": 1, "message": None}},
        {"error": "no"},
        {"result": 1, "error": {"code": 1, "message": "no"}},
        {},
    ],
)
def test_a_malformed_answer_fails_its_call_at_once_and_the_link_goes_on(
    answer: dict[str, Any],
) -> None:
    async def run() -> None:
        a, b = MemoryTransport.pair()
        host = Connection(a, name="harness")
        host.start()
        async with asyncio.timeout(5):
            call = asyncio.create_task(host.request("chat/deliver", {}, request_id="d1"))
            asked = await b.receive()
            assert isinstance(asked, JsonRpcRequest) and asked.id == "d1"
            await b.send({"jsonrpc": "2.0", "id": "d1", **answer})
            with pytest.raises(MalformedResponse, match="harness answered request 'd1' with a"):
                await call
            call = asyncio.create_task(host.request("chat/deliver", {}, request_id="d2"))
            await b.receive()
            await b.send({"jsonrpc": "2.0", "id": "d2", "result": {"accepted": True}})
            assert await call == {"accepted": True}
        assert not host.closed.is_set()
        await host.close()

    asyncio.run(run())


def test_an_unknown_method_gets_method_not_found() -> None:
    async def test(host: Connection, harness: Connection) -> None:
        host.start()
        harness.start()
        with pytest.raises(RpcError) as error:
            await host.request("chat/nothing")
        assert error.value.rpc_code == METHOD_NOT_FOUND

    linked(test)


def test_a_request_without_an_answer_times_out() -> None:
    async def test(host: Connection, harness: Connection) -> None:
        async def never(params: dict[str, Any] | None) -> Any:
            await asyncio.Event().wait()

        harness.on_request("never", never)
        host.start()
        harness.start()
        with pytest.raises(TimeoutError):
            await host.request("never", timeout=0.05)

    linked(test)


def test_requests_sent_without_waiting_are_read_in_order_and_answered_each_by_id() -> None:
    async def test(host: Connection, harness: Connection) -> None:
        gates = [asyncio.Event() for _ in range(5)]
        read: list[int] = []

        async def held(params: dict[str, Any] | None) -> Any:
            assert params is not None
            read.append(params["n"])
            await gates[params["n"]].wait()
            return params["n"]

        harness.on_request("held", held)
        host.start()
        harness.start()
        answers = [await host.send_request("held", {"n": n}) for n in range(5)]
        while len(read) < 5:
            await asyncio.sleep(0)
        assert read == [0, 1, 2, 3, 4]
        for gate in reversed(gates):
            gate.set()
        assert await asyncio.gather(*answers) == [0, 1, 2, 3, 4]
        assert not host._pending, "an answered request's id is forgotten"

    linked(test)


def test_a_request_that_cannot_be_written_leaves_nothing_waiting() -> None:
    async def test(host: Connection, harness: Connection) -> None:
        async def broken(message: dict[str, Any]) -> None:
            raise Closed("the pipe broke while writing")

        host.transport.send = broken  # type: ignore[method-assign]
        with pytest.raises(Closed, match="while writing"):
            await host.send_request("anything")
        await asyncio.sleep(0)
        assert not host._pending

    linked(test)


def test_a_peer_that_goes_away_fails_the_waiting_requests() -> None:
    async def test(host: Connection, harness: Connection) -> None:
        async def never(params: dict[str, Any] | None) -> Any:
            await asyncio.Event().wait()

        harness.on_request("never", never)
        host.start()
        harness.start()
        waiting = asyncio.create_task(host.request("never"))
        await asyncio.sleep(0)
        await harness.close()
        with pytest.raises(Closed):
            await waiting

    linked(test)


@pytest.mark.parametrize(
    ("harness_versions", "expected"),
    [([FULL_ENVELOPE, COMPACT_VIEW], COMPACT_VIEW), ([FULL_ENVELOPE], FULL_ENVELOPE)],
)
def test_initialize_settles_the_highest_common_version(
    harness_versions: list[str], expected: str
) -> None:
    async def test(host: Connection, harness: Connection) -> None:
        settled: list[Session] = []
        accept_initialize(
            harness, HARNESS, ALL, versions=harness_versions, on_session=settled.append
        )
        host.start()
        harness.start()
        session = await initialize(host, HOST, ALL)
        assert session.version == expected and settled[0].version == expected
        assert session.peer == HARNESS
        assert session.compact is (expected == COMPACT_VIEW)

    linked(test)


def test_no_common_version_is_a_clear_session_error() -> None:
    async def test(host: Connection, harness: Connection) -> None:
        accept_initialize(harness, HARNESS, ALL, versions=["2027-01-01"])
        host.start()
        harness.start()
        with pytest.raises(SessionError, match="no protocol version in common"):
            await initialize(host, HOST, ALL)

    linked(test)


def test_the_host_sends_only_modes_the_harness_accepted() -> None:
    async def test(host: Connection, harness: Connection) -> None:
        limited = caps(injection={"buffered": True, "tool_mailbox": True})
        accept_initialize(harness, HARNESS, limited)
        host.start()
        harness.start()
        session = await initialize(host, HOST, ALL)
        assert session.mode_for(InjectionMode.IMMEDIATE) is InjectionMode.BUFFERED
        assert session.mode_for(InjectionMode.NOTIFY) is InjectionMode.TOOL_MAILBOX
        assert session.mode_for(InjectionMode.DIGEST) is InjectionMode.TOOL_MAILBOX
        assert session.mode_for(InjectionMode.SILENT) is InjectionMode.SILENT

    linked(test)


@pytest.mark.parametrize(
    ("argv", "expected"), [([], COMPACT_VIEW), ([FULL_ENVELOPE], FULL_ENVELOPE)]
)
def test_initialize_over_a_real_stdio_subprocess(argv: list[str], expected: str) -> None:
    async def run() -> None:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(Path(__file__).with_name("stdio_harness.py")),
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=ROOT,
            env={"PYTHONPATH": str(ROOT)},
        )
        assert process.stdin is not None and process.stdout is not None
        host = Connection(StreamTransport(process.stdout, process.stdin), name="stdio-harness")
        host.start()
        try:
            async with asyncio.timeout(10):
                session = await initialize(host, HOST, ALL)
                assert session.version == expected
                assert await host.request("test/echo", {"x": 1}) == {"x": 1}
        finally:
            await host.close()
            async with asyncio.timeout(10):
                await process.wait()

    asyncio.run(run())
