"""Delivery with acknowledgement over a real stdio harness, through a crash and a restart."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from builders import local_workspace
from delivery_world import (
    EVENTS,
    EVERYTHING,
    HOST,
    ListedPort,
    engine_with_dms,
    mailbox_in_memory,
)

from core.clock import VirtualClock
from core.engine import Engine
from core.sqlite_store import SQLiteStore
from harness_bridge.delivery import Deliverer
from harness_bridge.envelope import deliver_request
from harness_bridge.jsonrpc import ClientInfo
from harness_bridge.mailbox import Mailbox
from harness_bridge.rpc import Connection
from harness_bridge.session import Session, initialize
from harness_bridge.transport import Closed, StreamTransport

ROOT = Path(__file__).resolve().parents[2]
HARNESS = Path(__file__).with_name("mailbox_harness.py")


async def start_harness(
    mailbox: Path, *crash_at: str
) -> tuple[asyncio.subprocess.Process, Connection]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HARNESS),
        str(mailbox),
        *crash_at,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT)},
    )
    assert process.stdin is not None and process.stdout is not None
    connection = Connection(StreamTransport(process.stdout, process.stdin), name="harness")
    connection.start()
    return process, connection


@pytest.mark.parametrize("window", [1, 8])
def test_killing_the_harness_mid_stream_redelivers_exactly_the_unacknowledged_in_order(
    tmp_path: Path, window: int
) -> None:
    """The harness dies on storing the 4th event, before acknowledging it. One at a time, it
    has been sent the first four; with a window of eight, at least eight. Either way the next
    harness gets every unacknowledged one again, from the 4th, in order, each sent before at
    its second attempt."""
    mailbox_file = tmp_path / "mailbox.sqlite3"

    async def run() -> tuple[list[str], list[str], list[str]]:
        store = SQLiteStore(str(tmp_path / "ledger.sqlite3"))
        engine, ids = await engine_with_dms(store)
        async with asyncio.timeout(30):
            process, connection = await start_harness(mailbox_file, "4")
            session = await initialize(connection, HOST, EVERYTHING)
            first = Deliverer(
                "lead", engine.deliveries, connection, session, timeout=5, window=window
            )
            with pytest.raises(Closed):
                await first.resume()
            await process.wait()
            await connection.close()
            assert process.returncode == -9

            process, connection = await start_harness(mailbox_file)
            session = await initialize(connection, HOST, EVERYTHING)
            second = Deliverer(
                "lead", engine.deliveries, connection, session, timeout=5, window=window
            )
            assert await second.resume() == EVENTS - 3
            await connection.close()
            await process.wait()
        await store.close()
        return ids, list(first.sent), list(second.sent)

    ids, before, after = asyncio.run(run())
    if window == 1:
        assert before == ids[:4]
    else:
        assert len(before) >= window and before == ids[: len(before)]
    assert after == ids[3:]
    again = [2 if event_id in before else 1 for event_id in ids]

    stored = Mailbox(str(mailbox_file)).entries()
    assert [e.event_id for e in stored] == ids
    assert [e.attempt for e in stored] == [1] * 4 + again[4:]

    with sqlite3.connect(tmp_path / "ledger.sqlite3") as db:
        rows = db.execute(
            "SELECT event_id, status, attempt FROM deliveries WHERE agent = 'lead' ORDER BY seq"
        ).fetchall()
    assert [r[0] for r in rows] == ids
    assert {r[1] for r in rows} == {"delivered"}
    assert [r[2] for r in rows] == [1, 1, 1, *again[3:]]
    if window == 1:
        assert [r[2] for r in rows] == [1, 1, 1, 2, 1, 1, 1, 1, 1, 1]


def test_a_redelivery_is_acknowledged_but_stored_once() -> None:
    async def run() -> None:
        store = SQLiteStore()
        engine, ids = await engine_with_dms(store)
        host, harness, mailbox = mailbox_in_memory()
        async with asyncio.timeout(10):
            session = await initialize(host, HOST, EVERYTHING)
            message = deliver_request(
                await engine.deliveries.delivery((await store.pending("lead"))[0]),
                compact=False,
                attempt=1,
            )
            first = await host.request("chat/deliver", message["params"])
            again = await host.request("chat/deliver", message["params"])
            assert (first, again) == (
                {"accepted": True, "duplicate": False},
                {"accepted": True, "duplicate": True},
            )
            assert [e.event_id for e in mailbox.entries()] == ids[:1]
            assert session.version == "2026-06-24"
        await host.close()
        await harness.close()
        await store.close()

    asyncio.run(run())


def test_a_notification_to_a_harness_that_stops_reading_gives_up_in_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The host passes cancellations and typing on from its receive path: a harness that no
    longer reads its standard input (stopped, hung) must not hold that path up."""

    async def run() -> float:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "import time; time.sleep(60)",  # never reads: the pipe fills and stays full
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert process.stdin is not None and process.stdout is not None
        connection = Connection(StreamTransport(process.stdout, process.stdin), name="harness")
        session = Session("0.1", ClientInfo(name="stuck", version="0"), EVERYTHING)
        engine = Engine(local_workspace(), SQLiteStore(":memory:"), VirtualClock())
        deliverer = Deliverer("lead", engine.deliveries, connection, session, notify_timeout=0.2)
        try:
            async with asyncio.timeout(10):  # the bug: this would wait for the harness forever
                started = time.monotonic()
                await deliverer.notify("notifications/typing", {"text": "x" * 1_000_000})
                return time.monotonic() - started
        finally:
            process.kill()
            await process.wait()
            await connection.close()

    caplog.set_level(logging.WARNING, logger="harness_bridge.delivery")
    took = asyncio.run(run())
    assert 0.2 <= took < 5
    [record] = caplog.records
    assert "notifications/typing" in record.getMessage() and "lead" in record.getMessage()


def test_the_deliverer_asks_the_host_only_through_its_delivery_port() -> None:
    async def run() -> None:
        store = SQLiteStore()
        engine, ids = await engine_with_dms(store)
        told = [await engine.deliveries.delivery(s) for s in await store.pending("lead")]
        port = ListedPort(told[:3])
        host, harness, mailbox = mailbox_in_memory()
        async with asyncio.timeout(10):
            session = await initialize(host, HOST, EVERYTHING)
            assert await Deliverer("lead", port, host, session, window=1).resume() == 3
        assert [e.event_id for e in mailbox.entries()] == ids[:3]
        assert port.calls == [
            (step, event_id, 1) for event_id in ids[:3] for step in ("attempt", "delivered")
        ]
        await host.close()
        await harness.close()
        await store.close()

    asyncio.run(run())
