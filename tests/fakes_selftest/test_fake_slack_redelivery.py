"""The fake Slack sends an event again, as Slack does, until one of its envelopes is
acknowledged: in new envelopes that say which retry they are, after the delays it was given."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from fakes.slack import FakeSlack

APP_TOKEN = "xapp-1-A111-test"
BODY = {"type": "event_callback", "event_id": "Ev1", "event": {"type": "message"}}


async def socket(slack: FakeSlack, http: aiohttp.ClientSession) -> aiohttp.ClientWebSocketResponse:
    """A Socket Mode connection of the app, past its `hello`."""
    answer = await http.post(f"{slack.api_url}apps.connections.open", data={"token": APP_TOKEN})
    ws = await http.ws_connect((await answer.json())["url"])
    assert (await ws.receive_json())["type"] == "hello"
    return ws


def test_an_unacknowledged_event_comes_again_until_acknowledged_then_never() -> None:
    async def main() -> tuple[list[dict[str, Any]], dict[str, str], list[Any]]:
        async with (
            asyncio.timeout(10),
            FakeSlack(redeliveries=(0.1, 0.1, 0.1, 0.1)) as slack,
            aiohttp.ClientSession() as http,
        ):
            ws = await socket(slack, http)
            first = await slack.push_event_to_each(BODY, app_token=APP_TOKEN)
            envelopes = [await ws.receive_json() for _ in range(3)]  # the first and 2 retries
            await ws.send_json({"envelope_id": envelopes[-1]["envelope_id"]})
            try:  # two more retries' time: none comes
                later = [await asyncio.wait_for(ws.receive_json(), 0.5)]
            except TimeoutError:
                later = []
            await ws.close()
            return envelopes, slack.retries, [*first, *later]

    envelopes, retries, rest = asyncio.run(main())
    assert [e["retry_attempt"] for e in envelopes] == [0, 1, 2]
    assert [e["retry_reason"] for e in envelopes] == ["", "timeout", "timeout"]
    assert all(e["payload"] == BODY for e in envelopes)
    ids = [e["envelope_id"] for e in envelopes]
    assert len(set(ids)) == 3 and rest == [ids[0]]
    assert retries == {ids[1]: ids[0], ids[2]: ids[0]}
