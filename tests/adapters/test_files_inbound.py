"""A file a person posts reaches the agent the message is for, on Slack and on Discord: it is
listed in the model's turn, and `chat_read_file` reads it through the platform (the real
slack-sdk client's bot token for Slack's `url_private`; Discord's signed CDN URL, no token)
from the fakes, within the workspace's size limit."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from builders import (
    D_HUMAN,
    D_LEAD,
    TEAM,
    discord_message,
    local_workspace,
    slack_body,
    slack_message,
)
from fakes.discord import FakeDiscord
from fakes.files import FileShelf
from fakes.slack import FakeSlack

from adapters.discord import normalise as discord_normalise
from adapters.discord.send import DiscordSender
from adapters.slack import normalise as slack_normalise
from adapters.slack.send import SlackSender
from core.clock import VirtualClock, parse_time
from core.emission import Delivery
from core.engine import Engine
from core.engine_port import EnginePort
from core.errors import ToolError
from core.outbox import Sender
from core.sqlite_store import SQLiteStore
from harness_bridge.envelope import deliver_params
from harness_bridge.prompt import parse_rendered, render_event
from harness_bridge.tools import ChatTools
from harness_bridge.wire import parse_deliver

LOG = b"09:15 deploy failed: exit 1\n"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
TOKEN = "xoxb-lead-test"


@dataclass
class Rig:
    platform: str
    shelf: FileShelf
    base: str
    payload: Callable[[list[dict[str, Any]]], dict[str, Any]]
    sender: Sender
    workspace: Any

    def file(self, file_id: str, name: str, mimetype: str, body: bytes, size: int = -1) -> Any:
        """A file the platform serves, and its entry in the message payload."""
        path = f"/files-pri/{TEAM}-{file_id}/{name}"
        if self.platform == "discord":
            path = f"/attachments/820000000000000001/{file_id}/{name}"
        self.shelf.put(path, body)
        size = len(body) if size < 0 else size
        url = self.base + path
        if self.platform == "slack":
            return {
                "id": file_id,
                "name": name,
                "mimetype": mimetype,
                "size": size,
                "url_private": url,
            }
        return {"id": file_id, "filename": name, "content_type": mimetype, "size": size, "url": url}


@asynccontextmanager
async def rigged(platform: str, **manifest: Any) -> AsyncIterator[Rig]:
    if platform == "slack":
        async with FakeSlack() as slack:
            slack.add_bot(TOKEN, "U0LEAD", "B0LEAD", TEAM)
            workspace = local_workspace(
                slack={"team_id": TEAM, "api_url": slack.api_url}, **manifest
            )
            env = {
                "SLACK_LEAD_BOT_TOKEN": TOKEN,
                "SLACK_W1_BOT_TOKEN": "xoxb-w1-test",
                "SLACK_W2_BOT_TOKEN": "xoxb-w2-test",
            }
            sender = SlackSender(workspace, env, clock=VirtualClock())

            def slack_payload(files: list[dict[str, Any]]) -> dict[str, Any]:
                event = slack_message(
                    "1767225601.000100", "logs attached", channel="D0LEAD", channel_type="im"
                )
                event |= {"subtype": "file_share", "files": files}
                return slack_body(event, via="lead")

            yield Rig(
                "slack",
                slack.files,
                slack.api_url.removesuffix("/api/"),
                slack_payload,
                sender,
                workspace,
            )
    else:
        async with FakeDiscord() as discord:
            api = f"{discord.url}/api/v10"
            workspace = local_workspace(
                discord={"guild_id": "800000000000000001", "api_url": api}, **manifest
            )

            def discord_payload(files: list[dict[str, Any]]) -> dict[str, Any]:
                frame = discord_message(
                    "1240000000000000001",
                    f"<@{D_LEAD}> logs attached",
                    author=D_HUMAN,
                    mentions=[D_LEAD],
                )
                frame["d"]["attachments"] = files
                return frame

            yield Rig(
                "discord",
                discord.files,
                discord.url,
                discord_payload,
                DiscordSender(workspace, {}),
                workspace,
            )


def run(
    platform: str,
    test: Callable[[Rig, Engine, ChatTools, Delivery], Awaitable[None]],
    files: Callable[[Rig], list[dict[str, Any]]],
    **manifest: Any,
) -> None:
    async def go() -> None:
        async with asyncio.timeout(20), rigged(platform, **manifest) as rig:
            store = SQLiteStore()
            await store.open()
            engine = Engine(rig.workspace, store, VirtualClock(parse_time("2026-01-01T00:00:10Z")))
            normalise = slack_normalise if platform == "slack" else discord_normalise
            event = normalise(rig.payload(files(rig)))
            assert event is not None
            async with store.transaction():
                outcome = await engine.ingest(event, "lead")
            (told,) = [
                e
                for e in outcome.emissions
                if isinstance(e, Delivery) and e.decision.agent == "lead"
            ]
            tools = ChatTools(EnginePort(engine, "lead", {platform: rig.sender}))
            await test(rig, engine, tools, told)
            await store.close()

    asyncio.run(go())


PLATFORMS = ["slack", "discord"]


def log_and_picture(rig: Rig) -> list[dict[str, Any]]:
    return [
        rig.file("F0LOG", "deploy.log", "text/plain", LOG),
        rig.file("F0PNG", "screen.png", "image/png", PNG),
    ]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_posted_file_is_listed_in_the_turn_and_read_with_the_bots_credentials(
    platform: str,
) -> None:
    async def test(rig: Rig, engine: Engine, tools: ChatTools, told: Delivery) -> None:
        event_id = told.decision.event_id
        params = parse_deliver(deliver_params(told))
        assert rig.base not in json.dumps(deliver_params(told))  # the URL is the host's only
        assert [a.id for a in params.attachments or ()] == ["F0LOG", "F0PNG"]
        (shown,) = parse_rendered(render_event(params))
        assert shown["parts"].split("\n") == [
            '[file: "deploy.log", text/plain, 28 B; read with chat_read_file fileId F0LOG]',
            '[file: "screen.png", image/png, 40 B; read with chat_read_file fileId F0PNG]',
        ]

        read = await tools.call("chat_read_file", {"eventId": event_id, "fileId": "F0LOG"})
        assert read == {
            "fileId": "F0LOG",
            "name": "deploy.log",
            "mimetype": "text/plain",
            "size": len(LOG),
            "text": LOG.decode(),
        }
        picture = await tools.call("chat_read_file", {"eventId": event_id, "fileId": "F0PNG"})
        assert picture["image"]["mimeType"] == "image/png"
        expected = "Bearer " + TOKEN if platform == "slack" else None
        assert [r.authorization for r in rig.shelf.requests] == [expected, expected]

    run(platform, test, log_and_picture)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_reading_tools_list_a_message_s_files_without_their_urls(platform: str) -> None:
    async def test(rig: Rig, engine: Engine, tools: ChatTools, told: Delivery) -> None:
        event_id = told.decision.event_id
        listed = await tools.call("chat_list_events", {})
        conversation = listed["events"][-1]["conversation"]["id"]
        thread = await tools.call("chat_read_thread", {"conversation": conversation})
        for events in (listed["events"], thread["events"]):
            (shown,) = [e for e in events if e["eventId"] == event_id]
            assert [(f["fileId"], f["name"]) for f in shown["attachments"]] == [
                ("F0LOG", "deploy.log"),
                ("F0PNG", "screen.png"),
            ]
            assert rig.base not in json.dumps(shown)
        assert all("attachments" not in e for e in listed["events"] if e["eventId"] != event_id)

    run(platform, test, log_and_picture)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_file_over_the_limit_is_refused_saying_so_and_never_fetched(platform: str) -> None:
    def big(rig: Rig) -> list[dict[str, Any]]:
        return [
            rig.file("F0BIG", "huge.log", "text/plain", LOG * 10, size=5000),
            rig.file("F0LIE", "small.log", "text/plain", LOG * 10, size=10),
        ]

    async def test(rig: Rig, engine: Engine, tools: ChatTools, told: Delivery) -> None:
        event_id = told.decision.event_id
        with pytest.raises(ToolError, match="larger than the 100 bytes an agent may read"):
            await tools.call("chat_read_file", {"eventId": event_id, "fileId": "F0BIG"})
        assert rig.shelf.requests == []
        # A size the payload understated is caught on what arrives.
        with pytest.raises(ToolError, match="larger than the 100 bytes"):
            await tools.call("chat_read_file", {"eventId": event_id, "fileId": "F0LIE"})

    run(platform, test, big, attention={"file_text_bytes": 100})


@pytest.mark.parametrize("platform", PLATFORMS)
def test_only_files_on_delivered_messages_from_the_platforms_hosts_are_read(
    platform: str,
) -> None:
    def elsewhere(rig: Rig) -> list[dict[str, Any]]:
        entry = rig.file("F0LOG", "deploy.log", "text/plain", LOG)
        key = "url_private" if platform == "slack" else "url"
        return [entry | {key: "http://198.51.100.7/steal"}]

    async def test(rig: Rig, engine: Engine, tools: ChatTools, told: Delivery) -> None:
        event_id = told.decision.event_id
        with pytest.raises(ToolError, match="gave no URL of its own"):
            await tools.call("chat_read_file", {"eventId": event_id, "fileId": "F0LOG"})
        with pytest.raises(ToolError, match="has no file 'F0NONE'"):
            await tools.call("chat_read_file", {"eventId": event_id, "fileId": "F0NONE"})
        other = ChatTools(EnginePort(engine, "worker-2", {platform: rig.sender}))
        with pytest.raises(ToolError, match="was delivered to you"):
            await other.call("chat_read_file", {"eventId": event_id, "fileId": "F0LOG"})
        assert rig.shelf.requests == []

    run(platform, test, elsewhere)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_sign_in_page_in_place_of_the_file_is_refused_not_shown(platform: str) -> None:
    def signed_out(rig: Rig) -> list[dict[str, Any]]:
        entry = rig.file("F0LOG", "deploy.log", "text/plain", LOG)
        path = entry.get("url_private", entry.get("url", "")).removeprefix(rig.base)
        rig.shelf.put(path, b"<html>sign in</html>", "text/html")
        return [entry]

    async def test(rig: Rig, engine: Engine, tools: ChatTools, told: Delivery) -> None:
        with pytest.raises(ToolError, match="a web page instead of file 'deploy\\.log'"):
            await tools.call(
                "chat_read_file", {"eventId": told.decision.event_id, "fileId": "F0LOG"}
            )

    run(platform, test, signed_out)
