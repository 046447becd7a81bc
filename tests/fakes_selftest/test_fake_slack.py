"""The fake Slack speaks the wire format the real slack-sdk and slack-bolt expect."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from fakes.slack import FakeSlack, sign
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

BOT_TOKEN = "xoxb-test"
APP_TOKEN = "xapp-1-A111-test"


def run(test: Callable[[FakeSlack], Awaitable[None]]) -> None:
    async def main() -> None:
        async with asyncio.timeout(10), FakeSlack() as slack:
            await test(slack)

    asyncio.run(main())


def message_body(text: str, ts: str) -> dict[str, Any]:
    event = {
        "type": "message",
        "user": "U0ALICE",
        "text": text,
        "ts": ts,
        "channel": "C111",
        "channel_type": "channel",
        "event_ts": ts,
    }
    return {
        "token": "verification-token",
        "team_id": "T111",
        "api_app_id": "A111",
        "event": event,
        "type": "event_callback",
        "event_id": f"Ev{ts.replace('.', '')}",
        "event_time": int(float(ts)),
        "authorizations": [{"team_id": "T111", "user_id": "U0BOT", "is_bot": True}],
    }


def test_web_client_calls_are_answered_and_recorded() -> None:
    async def scenario(slack: FakeSlack) -> None:
        client = AsyncWebClient(base_url=slack.api_url, token=BOT_TOKEN)
        auth = await client.auth_test()
        posted = await client.chat_postMessage(channel="C111", text="hi", thread_ts="1.000001")
        history = await client.conversations_history(channel="C111", limit=10)

        assert (auth["user_id"], auth["bot_id"], auth["team_id"]) == ("U0BOT", "B0BOT", "T111")
        assert posted["channel"] == "C111" and posted["message"]["text"] == "hi"
        assert [c.method for c in slack.calls] == [
            "auth.test",
            "chat.postMessage",
            "conversations.history",
        ]
        post = slack.calls[1]
        assert post.token == BOT_TOKEN
        assert post.params == {"channel": "C111", "text": "hi", "thread_ts": "1.000001"}
        assert slack.calls[2].params == {"channel": "C111", "limit": "10"}  # a GET query
        assert history["messages"] == []  # a reply is not top-level
        assert slack.messages["C111"][0]["ts"] == posted["ts"]

    run(scenario)


def test_fake_ts_increase_and_reactions_repeat_is_already_reacted() -> None:
    async def scenario(slack: FakeSlack) -> None:
        client = AsyncWebClient(base_url=slack.api_url, token=BOT_TOKEN)
        first = await client.chat_postMessage(channel="C111", text="one")
        second = await client.chat_postMessage(channel="C111", text="two")
        await client.reactions_add(channel="C111", timestamp=first["ts"], name="eyes")
        with pytest.raises(SlackApiError) as repeat:
            await client.reactions_add(channel="C111", timestamp=first["ts"], name="eyes")

        assert float(second["ts"]) > float(first["ts"])
        assert repeat.value.response["error"] == "already_reacted"
        assert slack.reactions == {("C111", first["ts"], "eyes", "U0BOT")}

    run(scenario)


def test_threads_edits_and_lookups_answer_in_slack_shapes() -> None:
    async def scenario(slack: FakeSlack) -> None:
        slack.add_user("U0ALICE", "Alice")
        slack.members["C111"] = ["U0ALICE", "U0BOT"]
        slack.usergroups["S111"] = ["U0ALICE"]
        root = slack.add_message("C111", "question", user="U0ALICE")
        client = AsyncWebClient(base_url=slack.api_url, token=BOT_TOKEN)
        reply = await client.chat_postMessage(channel="C111", text="draft", thread_ts=root)
        await client.chat_update(channel="C111", ts=reply["ts"], text="answer")
        thread = await client.conversations_replies(channel="C111", ts=root)
        history = await client.conversations_history(channel="C111")
        await client.assistant_threads_setStatus(
            channel_id="C111", thread_ts=root, status="is thinking..."
        )
        ephemeral = await client.chat_postEphemeral(channel="C111", user="U0ALICE", text="psst")
        await client.chat_delete(channel="C111", ts=reply["ts"])

        assert [m["text"] for m in thread["messages"]] == ["question", "answer"]
        assert history["messages"][0]["reply_count"] == 1
        assert "message_ts" in ephemeral
        assert [m["ts"] for m in slack.messages["C111"]] == [root]
        assert (await client.users_info(user="U0ALICE"))["user"]["real_name"] == "Alice"
        members = await client.conversations_members(channel="C111")
        assert members["members"] == ["U0ALICE", "U0BOT"]
        assert (await client.usergroups_users_list(usergroup="S111"))["users"] == ["U0ALICE"]
        status = slack.calls_to("assistant.threads.setStatus")[0].params
        assert status == {"channel_id": "C111", "thread_ts": root, "status": "is thinking..."}

    run(scenario)


def test_a_reply_comes_after_its_parent_even_one_from_the_future() -> None:
    async def scenario(slack: FakeSlack) -> None:
        root = slack.add_message("C111", "question", user="U0ALICE", ts="1999999999.000001")
        client = AsyncWebClient(base_url=slack.api_url, token=BOT_TOKEN)
        reply = await client.chat_postMessage(channel="C111", text="answer", thread_ts=root)
        later = await client.chat_postMessage(channel="C111", text="later")
        thread = await client.conversations_replies(channel="C111", ts=root, oldest=root)

        assert root < reply["ts"] < later["ts"]
        assert [m["text"] for m in thread["messages"]] == ["question", "answer"]

    run(scenario)


def test_history_and_replies_page_with_oldest_limit_and_cursor_as_slack_does() -> None:
    async def scenario(slack: FakeSlack) -> None:
        top = [slack.add_message("C111", f"m{n}", user="U0ALICE") for n in range(5)]
        root = top[0]
        replies = [
            slack.add_message("C111", f"r{n}", user="U0ALICE", thread_ts=root) for n in range(4)
        ]
        client = AsyncWebClient(base_url=slack.api_url, token=BOT_TOKEN)

        async def pages(method: str, **params: Any) -> list[list[str]]:
            found: list[list[str]] = []
            cursor: str | None = None
            while True:
                answer = await client.api_call(
                    method, http_verb="GET", params={**params, "limit": 2, "cursor": cursor}
                )
                found.append([m["text"] for m in answer["messages"]])
                cursor = answer["response_metadata"]["next_cursor"] or None
                assert answer["has_more"] is (cursor is not None)
                if cursor is None:
                    return found

        # history: top-level only, newest first, after `oldest` (exclusive)
        assert await pages("conversations.history", channel="C111", oldest=top[1]) == [
            ["m4", "m3"],
            ["m2"],
        ]
        # replies: oldest first, the parent first on the first page whatever `oldest` says
        assert await pages("conversations.replies", channel="C111", ts=root, oldest=replies[0]) == [
            ["m0", "r1"],
            ["r2", "r3"],
        ]
        assert await pages("conversations.replies", channel="C111", ts=root) == [
            ["m0", "r0"],
            ["r1", "r2"],
            ["r3"],
        ]
        with pytest.raises(SlackApiError) as bad:
            await client.conversations_history(channel="C111", cursor="not-a-cursor")
        assert bad.value.response["error"] == "invalid_cursor"

    run(scenario)


def test_form_encoded_parameters_and_a_token_in_the_body_are_read() -> None:
    async def scenario(slack: FakeSlack) -> None:
        form = {"token": BOT_TOKEN, "channel": "C111", "text": "by form"}
        url = slack.api_url + "chat.postMessage"
        async with aiohttp.ClientSession() as session, session.post(url, data=form) as response:
            body = await response.json()

        assert body["ok"] and body["message"]["text"] == "by form"
        assert slack.calls[0].token == BOT_TOKEN
        assert slack.calls[0].params == {"channel": "C111", "text": "by form"}

    run(scenario)


def test_unknown_token_is_invalid_auth() -> None:
    async def scenario(slack: FakeSlack) -> None:
        client = AsyncWebClient(base_url=slack.api_url, token="xoxb-unknown")
        with pytest.raises(SlackApiError) as failed:
            await client.auth_test()

        assert failed.value.response["error"] == "invalid_auth"

    run(scenario)


def test_bolt_socket_mode_receives_an_event_and_the_fake_records_the_ack() -> None:
    async def scenario(slack: FakeSlack) -> None:
        app = AsyncApp(client=AsyncWebClient(base_url=slack.api_url, token=BOT_TOKEN))
        seen: asyncio.Queue[str] = asyncio.Queue()

        @app.event("message")
        async def on_message(event: dict[str, Any]) -> None:
            await seen.put(event["text"])

        handler = AsyncSocketModeHandler(app, APP_TOKEN)
        await handler.connect_async()
        try:
            await slack.wait_connected(1)
            ack = await slack.send_event(message_body("hello", "1767225600.000100"))
            text = await asyncio.wait_for(seen.get(), 5)
        finally:
            await handler.close_async()

        assert text == "hello"
        assert slack.acks == [ack] and set(ack) == {"envelope_id"}
        # The app-level token went to the fake too: the handler's client is the app's client.
        assert handler.client.web_client is app.client
        opened = slack.calls_to("apps.connections.open")
        assert [c.token for c in opened] == [APP_TOKEN]
        assert [c.token for c in slack.calls_to("auth.test")] == [BOT_TOKEN]

    run(scenario)


def test_a_disconnect_makes_the_client_reconnect_and_events_still_arrive() -> None:
    async def scenario(slack: FakeSlack) -> None:
        app = AsyncApp(client=AsyncWebClient(base_url=slack.api_url, token=BOT_TOKEN))
        seen: asyncio.Queue[str] = asyncio.Queue()

        @app.event("message")
        async def on_message(event: dict[str, Any]) -> None:
            await seen.put(event["text"])

        handler = AsyncSocketModeHandler(app, APP_TOKEN)
        await handler.connect_async()
        try:
            await slack.wait_connected(1)
            await slack.send_event(message_body("before", "1767225600.000100"))
            await slack.send_disconnect(reason="refresh_requested")
            await slack.wait_connected(2)
            await slack.send_event(message_body("after", "1767225600.000200"))
            texts = [await asyncio.wait_for(seen.get(), 5) for _ in range(2)]
        finally:
            await handler.close_async()

        assert texts == ["before", "after"]
        assert len(slack.acks) == 2
        assert len(slack.calls_to("apps.connections.open")) == 2

    run(scenario)


def test_a_scripted_429_reaches_the_client_as_a_rate_limit_error() -> None:
    async def scenario(slack: FakeSlack) -> None:
        client = AsyncWebClient(base_url=slack.api_url, token=BOT_TOKEN)
        slack.fail_next("chat.postMessage", status=429, headers={"Retry-After": "1"})
        with pytest.raises(SlackApiError) as limited:
            await client.chat_postMessage(channel="C111", text="hi")
        again = await client.chat_postMessage(channel="C111", text="hi")

        response = limited.value.response
        assert response.status_code == 429 and response["error"] == "ratelimited"
        assert response.headers["Retry-After"] == "1"
        assert again["ok"] and len(slack.calls_to("chat.postMessage")) == 2
        assert [m["text"] for m in slack.messages["C111"]] == ["hi"]  # the 429 stored nothing

    run(scenario)


def test_a_send_that_times_out_after_accept_was_still_posted() -> None:
    async def scenario(slack: FakeSlack) -> None:
        client = AsyncWebClient(base_url=slack.api_url, token=BOT_TOKEN, timeout=1)
        slack.fail_next("chat.postMessage", timeout_after_accept=True)
        with pytest.raises(TimeoutError):  # a plain TimeoutError: slack-sdk does not retry it
            await client.chat_postMessage(channel="C111", text="maybe")

        assert [m["text"] for m in slack.messages["C111"]] == ["maybe"]
        assert len(slack.calls_to("chat.postMessage")) == 1

    run(scenario)


def test_sign_produces_headers_slack_sdk_verifies() -> None:
    body = b'{"type":"event_callback"}'
    now = int(time.time())
    headers = sign(body, "not-a-real-secret", now)

    assert SignatureVerifier("not-a-real-secret").is_valid_request(body, headers)
    assert not SignatureVerifier("other-secret").is_valid_request(body, headers)
