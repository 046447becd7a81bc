"""Finding a model server already running on this machine: the first port whose `/v1/models`
lists a model is used, with `C2A_MODEL` or its first model; what answers with anything else is
not a model server; and the `local` backend, with no `C2A_MODEL_URL`, answers through the one
it found and says so."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from builders import local_workspace, slack_body, slack_message
from fakes.openai_server import FakeOpenAI, streamed, text_chunk
from fakes.threaded import in_thread
from world import harness_context

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.engine import Engine
from core.errors import ManifestError
from core.sqlite_store import SQLiteStore
from harness_bridge.backends.builtin import BuiltinHarness
from harness_bridge.backends.discover import MAX_BODY, Found, find_server, ports_from
from harness_bridge.backends.registry import build

DM = "slack:T0LOCAL:D0LEAD:1767225601.000100"


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def _listing(_: web.Request) -> web.Response:
    return web.json_response({"data": [{"id": "x"}]})


@asynccontextmanager
async def answering(handler: web.RequestHandler) -> AsyncIterator[int]:  # type: ignore[type-arg]
    """Something on a free loopback port answering `GET /v1/models` with `handler`."""
    app = web.Application()
    app.router.add_get("/v1/models", handler)
    app.router.add_get("/elsewhere", _listing)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


def probe(*ports: int, model: str | None = None) -> Found | None:
    return find_server(ports, model, timeout=2.0)


def test_the_first_port_listing_a_model_is_used_with_its_first_model() -> None:
    async def scenario() -> None:
        async with (
            FakeOpenAI([], models=["qwen2.5:7b", "llama3"]) as first,
            FakeOpenAI([], models=["other"]) as second,
        ):
            dead = free_port()
            found = await asyncio.to_thread(probe, dead, first.port, second.port)
            assert found == Found(first.base_url, "qwen2.5:7b", "an OpenAI-compatible server")
            named = await asyncio.to_thread(probe, second.port, first.port, model="llama3")
            assert named == Found(second.base_url, "llama3", "an OpenAI-compatible server")
        assert await asyncio.to_thread(probe, first.port) is None  # gone

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "answer",
    [
        web.Response(text="not json"),
        web.json_response({"data": []}),
        web.json_response({"data": [{"id": ""}, {"id": 7}, {"id": "a\x1bb"}, "x"]}),
        web.json_response({"models": [{"id": "x"}]}),
        web.json_response([{"id": "x"}]),
        web.json_response({"data": [{"id": "x"}]}, status=500),
        web.json_response({"data": [{"id": "x" * 201}]}),
        web.Response(text='{"data": [{"id": "x"}], "pad": "' + "a" * MAX_BODY + '"}'),
        web.Response(text="[" * 100_000 + "]" * 100_000),
        web.Response(status=302, headers={"Location": "/elsewhere"}),
    ],
    ids=[
        "text",
        "no-models",
        "bad-ids",
        "wrong-key",
        "list",
        "500",
        "long-id",
        "too-big",
        "deep",
        "redirect",
    ],
)
def test_what_answers_with_anything_else_is_not_a_model_server(answer: web.Response) -> None:
    async def handler(_: web.Request) -> web.Response:
        return answer

    async def scenario() -> None:
        async with answering(handler) as port:
            assert await asyncio.to_thread(probe, port) is None

    asyncio.run(scenario())


def test_a_server_that_holds_its_answer_is_given_up_on_within_the_timeout() -> None:
    async def held(_: web.Request) -> web.Response:
        await asyncio.sleep(30)
        return web.json_response({"data": [{"id": "late"}]})

    async def scenario() -> None:
        async with answering(held) as port:
            started = asyncio.get_running_loop().time()
            assert await asyncio.to_thread(find_server, [port], None, 0.3) is None
            assert asyncio.get_running_loop().time() - started < 2.0

    asyncio.run(scenario())


def test_the_ports_come_from_C2A_MODEL_PORTS_or_are_the_known_servers() -> None:
    assert ports_from({}) == (11434, 8080, 1234)
    assert ports_from({"C2A_MODEL_PORTS": ""}) == ()
    assert ports_from({"C2A_MODEL_PORTS": " 11434, 9000 "}) == (11434, 9000)
    for bad in ("ollama", "0", "70000", "80;rm"):
        with pytest.raises(ManifestError, match=r"C2A_MODEL_PORTS=.*is not a port"):
            ports_from({"C2A_MODEL_PORTS": bad})


def test_without_C2A_MODEL_URL_the_local_backend_answers_through_the_server_it_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("C2A_MODEL_URL", raising=False)
    monkeypatch.delenv("C2A_MODEL", raising=False)

    async def scenario() -> None:
        store = SQLiteStore(":memory:")
        await store.open()
        engine = Engine(local_workspace(), store, VirtualClock(parse_time("2026-01-01T00:00:10Z")))
        dm = slack_message("1767225601.000100", "is it green?", channel="D0LEAD", channel_type="im")
        async with store.transaction():
            event = normalise(slack_body(dm, via="lead"))
            assert event is not None
            await engine.ingest(event)
        # The local backend's text path: the model is asked for the answer itself, streamed.
        script = [streamed(text_chunk("Green."))]
        # The probe blocks this loop while it asks, as it does in `c2a run` (before anything
        # else runs), so the server runs on a loop of its own.
        with in_thread(FakeOpenAI(script, models=["qwen2.5:7b"])) as server:
            monkeypatch.setenv("C2A_MODEL_PORTS", f"{free_port()},{server.port}")
            harness = build(harness_context(engine, "lead"), {"backend": "local", "quiet_ms": 0})
            assert isinstance(harness, BuiltinHarness)
            status = harness.model_status()
            assert (status.model, status.state) == ("qwen2.5:7b", "ready")
            assert (
                status.where
                == f"an OpenAI-compatible server at {server.base_url}, found on this machine"
            )
            deliverer = await harness.start()
            try:
                assert await deliverer.resume() == 1
                await harness.idle()
            finally:
                await harness.stop()
        assert [r["model"] for r in server.requests] == ["qwen2.5:7b"]
        (delivery,) = await store.deliveries(DM)
        assert delivery.disposition is not None and delivery.disposition.value == "responded"
        await store.close()

    asyncio.run(scenario())
