"""The host's payload boundary: whatever a payload does to a normaliser, `Host.receive` quarantines
it with its reason, logs one line, and is ready for the next payload; the adapter never sees
the exception."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
import pytest
from builders import LEAD, local_workspace, slack_body, slack_message

from c2a.host import Host
from c2a.platforms import installed
from core.clock import VirtualClock
from core.emission import Emission
from core.events import ChatEvent
from core.sqlite_store import SQLiteStore


def good(n: int) -> dict[str, Any]:
    event = slack_message(
        f"176722560{n}.000100", f"<@{LEAD}> {n}", channel="D0LEAD", channel_type="im"
    )
    return slack_body(event, via="lead")


def with_host(scenario: Callable[[Host, SQLiteStore], Awaitable[None]]) -> None:
    async def main() -> None:
        emitted: list[Emission] = []

        async def sink(emissions: list[Emission]) -> None:
            emitted.extend(emissions)

        store = SQLiteStore(":memory:")
        host = Host(local_workspace(), store, VirtualClock(), sink)
        await host.start()
        try:
            await scenario(host, store)
        finally:
            await host.close()

    asyncio.run(main())


def quarantined(store: SQLiteStore) -> list[tuple[str, str, str]]:
    rows = store.db.execute("SELECT source, reason, payload FROM quarantine ORDER BY id")
    return [(str(a), str(b), str(c)) for a, b, c in rows.fetchall()]


normalise_slack = installed()["slack"].normalise


def broken(payload: Mapping[str, Any]) -> ChatEvent | None:
    if payload.get("break"):
        raise KeyError("a normaliser bug\nwith a second line")
    return normalise_slack(payload)


def test_a_normalisers_unexpected_exception_is_quarantined_and_the_next_payload_lands(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(host: Host, store: SQLiteStore) -> None:
        monkeypatch.setitem(host.normalisers, "slack", broken)
        first = await host.receive("slack", good(1), "lead")
        bad = await host.receive(
            "slack", {**good(2), "break": True, "token": "xoxb-secret"}, "lead"
        )
        last = await host.receive("slack", good(3), "lead")

        assert (first and first.status, bad, last and last.status) == ("new", None, "new")
        [(source, reason, payload)] = quarantined(store)
        assert source == "slack"
        assert reason == "unexpected KeyError: 'a normaliser bug\\nwith a second line'"
        assert orjson.loads(payload)["token"] == "[redacted:secret-field]"

    with caplog.at_level(logging.DEBUG, logger="c2a.host"):
        with_host(scenario)
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "KeyError" in warning.getMessage() and "\n" not in warning.getMessage()
    assert warning.exc_info is None  # no traceback at warning level
    assert any(r.levelno == logging.DEBUG and r.exc_info for r in caplog.records)


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "event_callback", "team_id": "T1", "event": {"type": "message", "ts": 10**30}},
        {"type": "event_callback", "team_id": "T1", "event": {"type": "message", "ts": "9" * 5000}},
        {
            "type": "event_callback",
            "team_id": "T1",
            "event_time": 10**5000,
            "event": {"type": "message", "channel": "C1", "ts": "1.0", "user": "U1"},
        },
        {"type": "event_callback", "team_id": "T1", "event": {"type": "message", "x": []}},
    ],
    ids=["int-past-64-bits", "5000-digit-ts", "5000-digit-event_time", "no-ts"],
)
def test_an_unreadable_payload_is_quarantined_whatever_it_holds(payload: dict[str, Any]) -> None:
    async def scenario(host: Host, store: SQLiteStore) -> None:
        assert await host.receive("slack", payload, "lead") is None
        assert await host.receive("slack", good(4), "lead") is not None
        [(_, reason, _)] = quarantined(store)
        assert reason and len(reason) < 300

    with_host(scenario)


def test_a_payload_too_deep_or_too_big_to_store_is_quarantined_without_its_body() -> None:
    deep: dict[str, Any] = {}
    for _ in range(2000):
        deep = {"d": deep}
    payload = {"type": "event_callback", "event": {"type": "message"}, "deep": deep, "n": 2**70}

    async def scenario(host: Host, store: SQLiteStore) -> None:
        assert await host.receive("slack", payload, "lead") is None
        [(_, reason, text)] = quarantined(store)
        assert "team_id" in reason
        assert text.startswith('"[payload not stored:')

    with_host(scenario)
