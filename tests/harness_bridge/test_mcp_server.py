"""The chat tools as an MCP server, driven by the SDK's own client over memory, HTTP and stdio."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from builders import (
    HUMAN2,
    LEAD,
    LOCAL,
    W1,
    W2,
    ingest_slack,
    slack_body,
    slack_join,
    slack_message,
)
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.shared.memory import create_client_server_memory_streams
from mcp.types import CallToolResult, TextContent

from c2a.mcp_cli import MIN_TOKEN, TOKEN_VARIABLE
from c2a.platforms import installed
from core.clock import VirtualClock, parse_time
from core.engine import Engine
from core.engine_port import EnginePort
from core.manifest import Workspace, load_manifest
from core.sqlite_store import SQLiteStore
from harness_bridge import mcp_server
from harness_bridge.mcp_server import HttpEndpoint, build_server
from harness_bridge.tools import TOOL_NAMES, ChatTools

BASE = 1767225600
DM = f"slack:T0LOCAL:D0LEAD:{BASE + 1}.000100"
CHATTER = f"slack:T0LOCAL:C0GEN:{BASE + 3}.000100"
ROOT = Path(__file__).resolve().parents[2]

Test = Callable[[Engine, SQLiteStore], Awaitable[None]]


async def ingest_scenario(engine: Engine) -> None:
    """A DM to the lead (must respond) and lunch chatter in #general (must not respond)."""
    bodies = [slack_body(slack_join(u)) for u in (LEAD, W1, W2)]
    bodies.append(
        slack_body(
            slack_message(
                f"{BASE + 1}.000100",
                "can you check the deploy?",
                channel="D0LEAD",
                channel_type="im",
            ),
            via="lead",
        )
    )
    bodies.append(slack_body(slack_message(f"{BASE + 3}.000100", "lunch anyone?", user=HUMAN2)))
    await ingest_slack(engine, bodies)


def scenario(test: Test, path: str = ":memory:") -> None:
    async def run() -> None:
        store = SQLiteStore(path)
        await store.open()
        try:
            workspace = Workspace.from_manifest(
                load_manifest(LOCAL, platforms=installed()), installed()
            )
            clock = VirtualClock(parse_time("2026-01-01T00:00:10Z"))
            engine = Engine(workspace, store, clock)
            await ingest_scenario(engine)
            async with asyncio.timeout(20):
                await test(engine, store)
        finally:
            await store.close()

    asyncio.run(run())


@contextlib.asynccontextmanager
async def connected(server: Server[Any]) -> AsyncIterator[ClientSession]:
    """A real client session joined to `server` by the SDK's in-memory stream pair."""
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        client_read, client_write = client_streams
        server_read, server_write = server_streams
        async with anyio.create_task_group() as tg:
            options = server.create_initialization_options()
            tg.start_soon(server.run, server_read, server_write, options)
            async with ClientSession(client_read, client_write) as session:
                await session.initialize()
                yield session
            # End of input: the server's loop finishes on its own, and the task group joins it.
            await client_write.aclose()
            await server_write.aclose()


def agent(engine: Engine, name: str) -> AsyncIterator[ClientSession]:
    return connected(build_server(ChatTools(EnginePort(engine, name))))


def outbox_keys(store: SQLiteStore) -> list[tuple[str, str]]:
    rows = store.db.execute("SELECT agent, idempotency_key FROM outbox ORDER BY rowid")
    return [(agent, key) for agent, key in rows if not key.endswith(":react:seen")]


def disposition(store: SQLiteStore, event_id: str, agent: str) -> str | None:
    row = store.db.execute(
        "SELECT disposition FROM deliveries WHERE event_id = ? AND agent = ?",
        (event_id, agent),
    ).fetchone()
    assert row is not None, f"{event_id} was not delivered to {agent}"
    value: str | None = row[0]
    return value


def reply(event_id: str, text: str, **extra: Any) -> dict[str, Any]:
    conversation = event_id.split(":")[2]
    return {"target": {"conversation": conversation}, "text": text, "inReplyTo": event_id, **extra}


def text_of(result: CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, TextContent)
    return block.text


def test_list_tools_offers_the_eight_chat_tools_with_their_schemas() -> None:
    async def test(engine: Engine, store: SQLiteStore) -> None:
        async with agent(engine, "lead") as session:
            listed = (await session.list_tools()).tools
        assert [t.name for t in listed] == list(TOOL_NAMES)
        specs = {s["name"]: s for s in ChatTools.specs()}
        for tool in listed:
            assert tool.description == specs[tool.name]["description"]
            assert tool.input_schema == specs[tool.name]["inputSchema"]

    scenario(test)


def test_send_message_twice_with_one_key_queues_once() -> None:
    async def test(engine: Engine, store: SQLiteStore) -> None:
        args = reply(DM, "The deploy is green.", idempotencyKey="k-1")
        async with agent(engine, "lead") as session:
            first = await session.call_tool("chat_send_message", args)
            again = await session.call_tool("chat_send_message", args)
        assert not first.is_error and not again.is_error
        assert first.structured_content == {"status": "queued", "idempotencyKey": "lead/k-1"}
        assert again.structured_content == {"status": "duplicate", "idempotencyKey": "lead/k-1"}
        assert '"status": "queued"' in text_of(first)
        assert outbox_keys(store) == [("lead", "lead/k-1")]
        assert disposition(store, DM, "lead") == "responded"

    scenario(test)


def test_two_agents_racing_to_claim_one_event_give_one_winner() -> None:
    async def test(engine: Engine, store: SQLiteStore) -> None:
        async with agent(engine, "worker-1") as one, agent(engine, "worker-2") as two:
            results = await asyncio.gather(
                one.call_tool("chat_claim", {"eventId": CHATTER}),
                two.call_tool("chat_claim", {"eventId": CHATTER}),
            )
        answers = [r.structured_content for r in results]
        assert all(isinstance(a, dict) for a in answers)
        assert sorted(a["claimed"] for a in answers) == [False, True]
        [winner] = [a["holder"] for a in answers if a["claimed"]]
        assert {a["holder"] for a in answers} == {winner}
        rows = store.db.execute("SELECT item, agent FROM claims").fetchall()
        assert rows == [(CHATTER, winner.removeprefix("agent:"))]

    scenario(test)


def test_defer_and_resolve_record_dispositions_and_a_reaction_to_chatter_is_refused() -> None:
    async def test(engine: Engine, store: SQLiteStore) -> None:
        async with agent(engine, "lead") as lead, agent(engine, "worker-1") as worker:
            deferred = await lead.call_tool(
                "chat_defer", {"eventId": DM, "reason": "after the deploy"}
            )
            assert deferred.structured_content == {"disposition": "deferred"}
            assert disposition(store, DM, "lead") == "deferred"
            resolved = await lead.call_tool("chat_resolve", {"eventId": DM})
            assert resolved.structured_content == {"disposition": "responded"}
            assert disposition(store, DM, "lead") == "responded"
            reacted = await worker.call_tool(
                "chat_react", {"inReplyTo": CHATTER, "signal": "declined"}
            )
        # Chatter is must_not_respond: not even a reaction answers it, and nothing is recorded.
        assert reacted.is_error and "must_not_respond" in text_of(reacted)
        assert disposition(store, CHATTER, "worker-1") is None

    scenario(test)


def test_a_refused_send_is_a_tool_error_with_the_reason_and_posts_nothing() -> None:
    async def test(engine: Engine, store: SQLiteStore) -> None:
        async with agent(engine, "worker-1") as session:
            refused = await session.call_tool("chat_send_message", reply(CHATTER, "Pizza!"))
            # The connection outlives the refusal.
            listed = await session.call_tool("chat_list_events", {"limit": 50})
        assert refused.is_error and refused.structured_content is None
        assert "refused" in text_of(refused) and "must_not_respond" in text_of(refused)
        assert outbox_keys(store) == []
        assert disposition(store, CHATTER, "worker-1") is None
        assert not listed.is_error

    scenario(test)


def test_bad_arguments_and_unknown_tools_are_tool_errors_not_protocol_errors() -> None:
    async def test(engine: Engine, store: SQLiteStore) -> None:
        async with agent(engine, "lead") as session:
            bad = await session.call_tool("chat_send_message", {"text": "no target"})
            unknown = await session.call_tool("chat_shout", {})
        assert bad.is_error and "invalid arguments" in text_of(bad)
        assert unknown.is_error and "unknown tool" in text_of(unknown)

    scenario(test)


def test_an_unexpected_failure_is_a_generic_tool_error() -> None:
    async def test(engine: Engine, store: SQLiteStore) -> None:
        class Faulty(ChatTools):
            async def claim(self, args: Any) -> dict[str, Any]:
                raise RuntimeError("disk on fire at /var/secret")

        async with connected(build_server(Faulty(EnginePort(engine, "lead")))) as session:
            failed = await session.call_tool("chat_claim", {"eventId": DM})
            still = await session.call_tool("chat_defer", {"eventId": DM, "reason": "later"})
        assert failed.is_error
        assert "chat_claim failed" in text_of(failed) and "secret" not in text_of(failed)
        assert still.structured_content == {"disposition": "deferred"}

    scenario(test)


def test_the_tools_work_over_streamable_http_on_loopback_with_the_endpoint_s_token() -> None:
    async def test(engine: Engine, store: SQLiteStore) -> None:
        endpoint = HttpEndpoint(ChatTools(EnginePort(engine, "lead")))
        url = await endpoint.start()
        try:
            assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
            async with (
                httpx2.AsyncClient(headers=endpoint.headers) as client,
                streamable_http_client(url, http_client=client) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                listed = (await session.list_tools()).tools
                args = reply(DM, "Green.", idempotencyKey="k-http")
                first = await session.call_tool("chat_send_message", args)
                again = await session.call_tool("chat_send_message", args)
        finally:
            await endpoint.aclose()
        assert [t.name for t in listed] == list(TOOL_NAMES)
        assert first.structured_content == {"status": "queued", "idempotencyKey": "lead/k-http"}
        assert again.structured_content == {"status": "duplicate", "idempotencyKey": "lead/k-http"}
        assert outbox_keys(store) == [("lead", "lead/k-http")]

    scenario(test)


def test_a_request_without_the_endpoint_s_token_goes_no_further() -> None:
    """Any local process reaches a loopback port: without the token (or with another, or with
    it twice) a request is answered 401 and no tool runs; a stopped endpoint frees its port."""
    send = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    send["params"] = {"name": "chat_send_message", "arguments": reply(DM, "x", idempotencyKey="k")}

    async def test(engine: Engine, store: SQLiteStore) -> None:
        endpoint = HttpEndpoint(ChatTools(EnginePort(engine, "lead")))
        url = await endpoint.start()
        other = HttpEndpoint(ChatTools(EnginePort(engine, "lead")))
        accept = {"Accept": "application/json, text/event-stream"}
        try:
            async with httpx2.AsyncClient() as client:
                tries = [
                    accept,
                    {**accept, **other.headers},
                    {**accept, "Authorization": f"bearer {endpoint.token}"},
                    {**accept, "Authorization": "Bearer"},
                ]
                answers = [await client.post(url, json=send, headers=h) for h in tries]
                twice = await client.post(
                    url,
                    json=send,
                    headers=[
                        ("Accept", accept["Accept"]),
                        *[("Authorization", f"Bearer {endpoint.token}")] * 2,
                    ],
                )
        finally:
            await endpoint.aclose()
        assert [a.status_code for a in [*answers, twice]] == [401] * 5
        assert all(a.headers["www-authenticate"] == "Bearer" for a in answers)
        assert outbox_keys(store) == []
        async with httpx2.AsyncClient() as client:
            with pytest.raises(httpx2.ConnectError):
                await client.post(url, json=send, headers=accept)

    scenario(test)


def test_an_endpoint_whose_server_fails_says_so_and_serves_again_when_next_asked(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(self: object, sockets: object) -> None:
        raise RuntimeError("no lifespan")

    async def test(engine: Engine, store: SQLiteStore) -> None:
        endpoint = HttpEndpoint(ChatTools(EnginePort(engine, "lead")))
        with monkeypatch.context() as patched:
            patched.setattr(mcp_server._EmbeddedServer, "serve", broken)
            await endpoint.start()
            while endpoint.url is not None:
                await asyncio.sleep(0.01)
        url = await endpoint.start()  # a new session asks again: served
        try:
            async with httpx2.AsyncClient(headers=endpoint.headers) as client:
                answer = await client.post(url, json={}, headers={"Accept": "application/json"})
            assert answer.status_code != 401
        finally:
            await endpoint.aclose()

    scenario(test)
    (line,) = [r for r in caplog.records if r.levelname == "ERROR"]
    assert line.getMessage() == "agent:lead chat tools endpoint stopped: no lifespan"


def test_the_module_runs_as_a_stdio_subprocess_over_the_shared_ledger(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.sqlite")

    async def test(engine: Engine, store: SQLiteStore) -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=[
                "-m",
                "c2a.mcp_cli",
                "--manifest",
                str(LOCAL),
                "--store",
                ledger,
                "--agent",
                "worker-1",
            ],
            cwd=ROOT,
        )
        with (tmp_path / "server.log").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                listed = (await session.list_tools()).tools
                refused = await session.call_tool("chat_send_message", reply(CHATTER, "Pizza!"))
                claimed = await session.call_tool("chat_claim", {"eventId": CHATTER})
        assert [t.name for t in listed] == list(TOOL_NAMES)
        assert refused.is_error and "must_not_respond" in text_of(refused)
        assert claimed.structured_content is not None
        assert claimed.structured_content["holder"] == "agent:worker-1"
        assert store.db.execute("SELECT item, agent FROM claims").fetchall() == [
            (CHATTER, "worker-1")
        ]
        assert outbox_keys(store) == []

    scenario(test, ledger)


def http_process(ledger: str, environ: dict[str, str]) -> subprocess.Popen[str]:
    """`python -m c2a.mcp_cli --http 127.0.0.1:0` as worker-1, its output piped."""
    command = [sys.executable, "-m", "c2a.mcp_cli", "--manifest", str(LOCAL), "--store", ledger]
    command += ["--agent", "worker-1", "--http", "127.0.0.1:0"]
    env = {k: v for k, v in os.environ.items() if k != TOKEN_VARIABLE} | environ
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)


@pytest.mark.parametrize("given", [None, "t" * MIN_TOKEN], ids=["token-made", "token-given"])
def test_the_module_over_http_admits_only_its_token_and_stops_on_sigterm(
    tmp_path: Path, given: str | None
) -> None:
    """Anyone can reach a port: the process prints where it listens and the header to send,
    answers 401 without it, serves the tools with it, and ends cleanly on SIGTERM."""
    ledger = str(tmp_path / "ledger.sqlite")
    accept = {"Accept": "application/json, text/event-stream"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize"}
    initialize["params"] = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    }

    async def test(engine: Engine, store: SQLiteStore) -> None:
        with http_process(ledger, {TOKEN_VARIABLE: given} if given else {}) as process:
            await served(process, given)

    async def served(process: subprocess.Popen[str], given: str | None) -> None:
        try:
            assert process.stdout is not None
            where = await asyncio.to_thread(process.stdout.readline)
            header = await asyncio.to_thread(process.stdout.readline)
            url = where.split(" at ")[1].strip()
            token = header.split("Bearer ")[1].strip().rstrip("`")
            assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
            assert token == given if given else len(token) >= MIN_TOKEN
            async with httpx2.AsyncClient() as client:
                bare = await client.post(url, json=initialize, headers=accept)
                bearer = {**accept, "Authorization": f"Bearer {token}"}
                admitted = await client.post(url, json=initialize, headers=bearer)
            assert bare.status_code == 401
            assert admitted.status_code == 200 and '"serverInfo"' in admitted.text
        finally:
            process.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(process.wait, 15) == 0

    scenario(test, ledger)


def test_the_module_refuses_a_short_token(tmp_path: Path) -> None:
    with http_process(str(tmp_path / "ledger.sqlite"), {TOKEN_VARIABLE: "short"}) as process:
        assert process.wait(30) == 2
