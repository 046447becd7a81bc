"""The outbound Discord side: real discord.py clients sending outbox actions to a fake Discord."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import aiohttp
import discord.http
import pytest
from aiohttp import web
from builders import D_BACKEND_ROLE, D_HUMAN, D_HUMAN2, D_LEAD, D_W1, DISCORD_IDS, GUILD
from builders import local_workspace as workspace_with
from fakes.discord import Call, FakeDiscord

from adapters.discord.render import nonce_for
from adapters.discord.send import DiscordSender
from core.action_records import to_record
from core.actions import Action, Delete, Edit, Post, React, Unreact, Visibility, Working
from core.clock import VirtualClock
from core.errors import PermanentSendError, SendOutcomeUnknown
from core.manifest import Workspace
from core.outbox import Outbox
from core.signals import Signal
from core.sqlite_store import SQLiteStore

CHANNEL = "820000000000000001"
THREAD = "820000000000000077"
TOKENS = {agent: f"{agent}-token-not-a-secret" for agent in DISCORD_IDS}
ENV = {
    "DISCORD_LEAD_TOKEN": TOKENS["lead"],
    "DISCORD_W1_TOKEN": TOKENS["worker-1"],
    "DISCORD_W2_TOKEN": TOKENS["worker-2"],
}
AT = "2024-05-14T09:01:00Z"
MESSAGES = f"/channels/{CHANNEL}/messages"


@dataclass
class World:
    fake: FakeDiscord
    sender: DiscordSender

    async def asks(self, content: str, channel: str = CHANNEL) -> str:
        """A person posts; returns the message id."""
        message = await self.fake.user_says(channel, D_HUMAN, content)
        return str(message["id"])

    def posts(self, path: str = MESSAGES) -> list[Call]:
        return [c for c in self.fake.calls if c.method == "POST" and c.path == path]

    def by(self, user_id: str) -> list[dict[str, Any]]:
        """Messages the fake holds from one author, oldest first."""
        found = [m for m in self.fake.messages.values() if m["author"]["id"] == user_id]
        return sorted(found, key=lambda m: int(m["id"]))


def reply(message_id: str, text: str, *, key: str = "k1", **changes: Any) -> Post:
    """A post as chat_send_message queues it, answering `message_id` as the lead."""
    action = Post(
        agent="lead",
        platform="discord",
        conversation=CHANNEL,
        key=key,
        text=text,
        in_reply_to=f"discord:{message_id}",
    )
    return replace(action, **changes)


def react(message_id: str, signal: str, agent: str = "lead") -> React:
    return React(
        agent=agent,
        platform="discord",
        conversation=CHANNEL,
        key=f"discord:{message_id}:{agent}:react:{signal}",
        message_id=message_id,
        signal=Signal(signal),
        event_id=f"discord:{message_id}",
    )


def serve_reactions(fake: FakeDiscord) -> None:
    """Work around the fake: its message objects carry no `reactions`. Real Discord lists
    them on GET message, with `me` for the bot asking."""
    original = fake._get_message

    async def get_message(req: Any) -> web.Response:
        response = await original(req)
        if response.status != 200:
            return response
        assert isinstance(response.body, bytes)
        message = json.loads(response.body)
        users: dict[str, list[str]] = {}
        for message_id, emoji, user_id in sorted(fake.reactions):
            if message_id == message["id"]:
                users.setdefault(emoji, []).append(user_id)
        message["reactions"] = [
            {
                "emoji": {"id": None, "name": emoji},
                "count": len(who),
                "count_details": {"burst": 0, "normal": len(who)},
                "me": req.bot.user["id"] in who,
                "me_burst": False,
                "burst_colors": [],
            }
            for emoji, who in users.items()
        ]
        return web.Response(body=json.dumps(message).encode(), content_type="application/json")

    fake._routes = [
        (method, pattern, get_message if handler == original else handler)
        for method, pattern, handler in fake._routes
    ]


@asynccontextmanager
async def world(
    monkeypatch: pytest.MonkeyPatch, workspace: Workspace | None = None, **options: Any
) -> AsyncIterator[World]:
    async with FakeDiscord(guild_id=GUILD) as fake:
        fake.patch(monkeypatch)
        for number, (agent, user_id) in enumerate(DISCORD_IDS.items(), 1):
            fake.add_bot(TOKENS[agent], user_id, agent, f"91000000000000000{number}")
        fake.add_role(D_BACKEND_ROLE, "backend")
        fake.add_member(D_HUMAN, "ada.l")
        fake.add_member(D_HUMAN2, "grace.h")
        fake.add_channel(CHANNEL, "general")
        serve_reactions(fake)
        options.setdefault("backoff", 0)
        async with asyncio.timeout(5):
            sender = await DiscordSender.connect(
                workspace or workspace_with(), environ=ENV, **options
            )
        try:
            async with asyncio.timeout(10):
                yield World(fake, sender)
        finally:
            await sender.close()


@asynccontextmanager
async def outbox_of(sender: DiscordSender) -> AsyncIterator[tuple[Outbox, SQLiteStore]]:
    store = SQLiteStore()
    await store.open()
    clock = VirtualClock(datetime(2024, 5, 14, 9, 1, tzinfo=UTC))
    try:
        yield Outbox(store, clock, {"discord": sender}), store
    finally:
        await store.close()


async def queue(store: SQLiteStore, action: Action | dict[str, Any]) -> None:
    """Put an action (typed, or a record as the store holds it) in the outbox."""
    record = action if isinstance(action, dict) else to_record(action)
    async with store.transaction():
        await store.put_outbox(record["idempotencyKey"], "lead", record, AT)


def outbox_rows(store: SQLiteStore) -> list[tuple[str, str, int, Any]]:
    rows = store.db.execute(
        "SELECT idempotency_key, status, attempts, result FROM outbox ORDER BY n"
    )
    return [(str(k), str(s), int(a), json.loads(r) if r else None) for k, s, a, r in rows]


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


# -- where replies go ---------------------------------------------------------------------------


def test_a_reply_in_a_channel_references_the_message_it_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("is the deploy done?")

            result = await w.sender.send(reply(asked, "yes, 14:02 UTC"))

            (call,) = w.posts()
            assert call.json["message_reference"] == {
                "type": 0,  # a reply, not a forward
                "message_id": int(asked),
                "channel_id": int(CHANNEL),
                "fail_if_not_exists": False,
            }
            assert call.json["nonce"] == nonce_for("k1", 0) and call.json["enforce_nonce"]
            (posted,) = w.by(D_LEAD)
            assert posted["type"] == 19 and posted["content"] == "yes, 14:02 UTC"
            assert posted["message_reference"]["message_id"] == asked
            assert result == {
                "messageId": posted["id"],
                "messageIds": [posted["id"]],
                "channelId": CHANNEL,
            }

    run(scenario())


def test_a_reply_in_a_thread_is_posted_in_the_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            w.fake.add_channel(THREAD, "deploy-42")  # a thread is a channel of its own
            asked = await w.asks("and staging?", channel=THREAD)

            await w.sender.send(reply(asked, "green", conversation=THREAD, thread=THREAD))

            assert w.posts() == []
            (call,) = w.posts(f"/channels/{THREAD}/messages")
            assert call.json["message_reference"]["message_id"] == int(asked)
            assert [m["channel_id"] for m in w.by(D_LEAD)] == [THREAD]

    run(scenario())


def test_a_thread_under_a_message_with_none_is_a_reply_to_it_in_the_channel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On Slack a thread is named by the message it hangs under; on Discord a thread is a
    channel, started only when asked, so naming a message with no thread replies to it."""

    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("which build is on staging?")
            later = await w.asks("anyone?")

            await w.sender.send(reply(asked, "build 42", thread=asked, in_reply_to=None))
            await w.sender.send(reply(later, "from 14:02", key="k2", thread=asked))

            first, second = w.posts()  # in the channel: no thread was started from `asked`
            assert first.json["message_reference"]["message_id"] == int(asked)
            assert second.json["message_reference"]["message_id"] == int(later)  # what it answers
            assert w.posts(f"/channels/{asked}/messages") == []
            assert [m["channel_id"] for m in w.by(D_LEAD)] == [CHANNEL, CHANNEL]

    run(scenario())


# `ephemeral` (a turn budget's notice, `core.budget_notice`) too: a bot posts no ephemeral
# message outside an interaction, so it is the asker's DM that keeps it to them.
@pytest.mark.parametrize("visibility", ["dm", "ephemeral"])
def test_a_dm_reply_goes_to_the_asker_privately(
    monkeypatch: pytest.MonkeyPatch, visibility: Visibility
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("can you send me the staging password policy?")

            answer = reply(asked, "sent you the link", visibility=visibility, person=D_HUMAN)
            result = await w.sender.send(answer)

            opened = [c for c in w.fake.calls if c.path == "/users/@me/channels"]
            assert [c.json for c in opened] == [{"recipient_id": int(D_HUMAN)}]
            (dm,) = w.fake.dm_channels
            (call,) = w.posts(f"/channels/{dm}/messages")
            assert "message_reference" not in call.json  # a reply cannot cross channels
            assert w.posts() == [] and result["channelId"] == dm
            with pytest.raises(PermanentSendError, match="needs the Discord user it is for"):
                await w.sender.send(replace(answer, key="k2", person="ana"))

    run(scenario())


# -- splitting and mentions ---------------------------------------------------------------------


def test_a_2500_character_reply_is_two_messages_with_the_code_fence_reopened(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code = "\n".join(f"print({i:04d})  # step {i:04d} of the migration" for i in range(60))
    text = "Here is the script:\n```python\n" + code + "\n```\nRun it twice."
    assert 2400 < len(text) <= 2600

    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("how do I migrate?")

            result = await w.sender.send(reply(asked, text))

            first, second = w.by(D_LEAD)
            assert len(first["content"]) <= 2000 and len(second["content"]) <= 2000
            assert first["content"].startswith("Here is the script:\n```python\n")
            assert first["content"].endswith("\n```")
            assert second["content"].startswith("```python\nprint(")
            assert second["content"].endswith("```\nRun it twice.")
            rejoined = first["content"].removesuffix("\n```") + "\n"
            rejoined += second["content"].removeprefix("```python\n")
            assert rejoined == text
            first_call, second_call = w.posts()
            assert "message_reference" in first_call.json
            assert "message_reference" not in second_call.json
            assert first_call.json["nonce"] != second_call.json["nonce"]
            assert result["messageIds"] == [first["id"], second["id"]]

    run(scenario())


def test_a_stray_everyone_role_or_user_mention_in_the_text_pings_nobody(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("what broke?")
            text = f"@everyone @here the cache broke; <@{D_HUMAN2}> and <@&{D_BACKEND_ROLE}> know"

            await w.sender.send(reply(asked, text))

            (call,) = w.posts()
            assert call.json["content"] == text
            assert call.json["allowed_mentions"] == {
                "parse": [],
                "users": [],
                "roles": [],
                "replied_user": False,
            }

    run(scenario())


def test_the_mentions_the_agent_chose_lead_the_message_and_are_the_only_ones_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("who owns the flaky test?")
            chosen = ("agent:worker-1", "role:backend", f"user:{D_HUMAN}")
            action = reply(asked, "can you take it? @everyone", mentions=chosen)

            await w.sender.send(replace(action, directedness="to_my_role"))

            (call,) = w.posts()
            assert call.json["content"] == (
                f"<@{D_W1}> <@&{D_BACKEND_ROLE}> <@{D_HUMAN}> can you take it? @everyone"
            )
            allowed = call.json["allowed_mentions"]
            assert allowed["parse"] == [] and allowed["replied_user"] is False
            assert allowed["users"] == [int(D_W1), int(D_HUMAN)]
            assert allowed["roles"] == [int(D_BACKEND_ROLE)]

    run(scenario())


# -- reactions ----------------------------------------------------------------------------------


def test_reaction_signals_use_the_workspaces_glyphs_and_done_removes_working(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    remapped = workspace_with(signals={"discord": {"done": "☑️"}})

    async def scenario() -> None:
        async with world(monkeypatch, remapped) as w:
            asked = await w.asks("please rotate the keys")
            await w.sender.send(react(asked, "seen"))
            await w.sender.send(react(asked, "working", agent="worker-1"))  # not the lead's
            assert w.fake.reactions == {(asked, "👀", D_LEAD), (asked, "🔧", D_W1)}
            await w.sender.send(react(asked, "working"))
            assert (asked, "👀", D_LEAD) not in w.fake.reactions  # working supersedes seen

            result = await w.sender.send(react(asked, "done"))

            assert result == {"messageId": asked, "emoji": "☑️", "removed": ["🔧"]}
            assert w.fake.reactions == {(asked, "☑️", D_LEAD), (asked, "🔧", D_W1)}
            puts = [c.path.rsplit("/", 2)[1] for c in w.fake.calls if c.method == "PUT"]
            assert puts == ["👀", "🔧", "🔧", "☑️"]

    run(scenario())


def methods(calls: list[Call]) -> list[str]:
    return [c.method for c in calls]


def test_a_status_known_to_be_the_first_on_its_message_does_not_read_the_message_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("please rotate the keys")
            queued = replace(react(asked, "queued"), placed=frozenset())  # as the engine queues it
            before = len(w.fake.calls)
            result = await w.sender.send(queued)
            assert result["removed"] == [] and methods(w.fake.calls[before:]) == ["PUT"]
            # Not known (a tool's signal): the message is read back to find what to take off.
            await w.sender.send(react(asked, "working"))
            assert methods(w.fake.calls[before:]) == ["PUT", "PUT", "GET", "DELETE"]
            assert w.fake.reactions == {(asked, "🔧", D_LEAD)}

    run(scenario())


def test_a_signal_taken_back_is_deleted_alone_and_on_a_message_gone_is_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def off(message_id: str) -> Unreact:
        placed = react(message_id, "blocked")
        return Unreact(
            agent=placed.agent,
            platform="discord",
            conversation=placed.conversation,
            key=placed.key + ":off",
            message_id=message_id,
            signal=Signal.BLOCKED,
        )

    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("please rotate the keys")
            await w.sender.send(react(asked, "blocked"))
            await w.sender.send(react(asked, "seen", agent="worker-1"))
            before = len(w.fake.calls)
            result = await w.sender.send(off(asked))
            assert result == {"messageId": asked, "removed": ["🚧"]}
            assert methods(w.fake.calls[before:]) == ["DELETE"]  # nothing added, nothing read
            assert w.fake.reactions == {(asked, "👀", D_W1)}
            gone = "1234567890123456789"  # no such message: Unknown Message, 10008
            assert (await w.sender.send(off(gone)))["gone"] is True

    run(scenario())


def test_a_reaction_retries_a_server_error_and_a_forbidden_one_fails_for_good(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("ping")
            w.fake.fail_next("PUT", f"{MESSAGES}/{asked}/reactions", status=503)
            await w.sender.send(react(asked, "agree"))
            assert w.fake.reactions == {(asked, "👍", D_LEAD)}

            w.fake.fail_next("PUT", f"{MESSAGES}/{asked}/reactions", status=403)
            with pytest.raises(PermanentSendError, match="403"):
                await w.sender.send(react(asked, "unclear"))

    run(scenario())


def test_a_signal_on_a_message_deleted_meanwhile_is_done_with_nothing_to_mark(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            gone = "1234567890123456789"  # no such message on the fake: Unknown Message, 10008
            result = await w.sender.send(react(gone, "seen"))
            assert result == {"messageId": gone, "emoji": "👀", "gone": True}
            assert w.fake.reactions == set()

    run(scenario())


# -- reliability through the outbox -------------------------------------------------------------


def test_a_429_then_success_through_the_outbox_makes_exactly_one_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w, outbox_of(w.sender) as (outbox, store):
            asked = await w.asks("status?")
            await queue(store, reply(asked, "all green"))
            w.fake.fail_next("POST", MESSAGES, status=429, retry_after=0.05)

            assert await outbox.drain() == 1

            assert [c.status for c in w.posts()] == [429, 200]
            (posted,) = w.by(D_LEAD)
            assert outbox_rows(store) == [
                (
                    "k1",
                    "sent",
                    1,
                    {"messageId": posted["id"], "messageIds": [posted["id"]], "channelId": CHANNEL},
                )
            ]

    run(scenario())


def lose_answers(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """The next `count` message posts reach Discord, but their answers never come back."""
    original = discord.http.HTTPClient.request
    left = {"n": count}

    async def request(self: Any, route: Any, **kwargs: Any) -> Any:
        answer = await original(self, route, **kwargs)
        if route.method == "POST" and route.path.endswith("/messages") and left["n"] > 0:
            left["n"] -= 1
            raise aiohttp.ServerDisconnectedError()
        return answer

    monkeypatch.setattr(discord.http.HTTPClient, "request", request)


def test_a_lost_answer_is_retried_with_the_same_nonce_and_discord_returns_the_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("restart the worker?")
            lose_answers(monkeypatch, 1)

            result = await w.sender.send(reply(asked, "restarted"))

            first, again = w.posts()
            assert first.json["nonce"] == again.json["nonce"]
            (posted,) = w.by(D_LEAD)
            assert result["messageId"] == posted["id"]

    run(scenario())


def test_an_ambiguous_send_is_found_in_the_history_and_never_posted_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch, attempts=1) as w, outbox_of(w.sender) as (outbox, store):
            asked = await w.asks("did the backup run?")
            await w.asks("hello?")  # someone else talks meanwhile
            await queue(store, reply(asked, "it ran at 03:00"))
            lose_answers(monkeypatch, 1)

            assert await outbox.drain() == 0
            assert [row[1] for row in outbox_rows(store)] == ["ambiguous"]
            (posted,) = w.by(D_LEAD)
            # Beyond the nonce window: history carries no nonce, only the content.
            del posted["nonce"]
            w.fake._nonces.clear()

            assert await outbox.drain() == 1

            assert len(w.posts()) == 1 and len(w.by(D_LEAD)) == 1
            (row,) = outbox_rows(store)
            assert row[1] == "sent" and row[3]["messageId"] == posted["id"]
            history = [c for c in w.fake.calls if c.method == "GET" and c.path == MESSAGES]
            assert history[0].query["after"] == asked

    run(scenario())


def test_find_tells_a_different_message_with_the_same_text_by_its_nonce(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("ok?")
            await w.sender.send(reply(asked, "ok", key="earlier"))

            assert await w.sender.find(reply(asked, "ok", key="later")) is None
            found = await w.sender.find(reply(asked, "ok", key="earlier"))
            assert found is not None and found["messageId"] == w.by(D_LEAD)[0]["id"]

    run(scenario())


def fail_second_post(monkeypatch: pytest.MonkeyPatch, fake: FakeDiscord) -> None:
    """The first message post goes through; the second gets a 503."""
    original = discord.http.HTTPClient.request
    posts = {"n": 0}

    async def request(self: Any, route: Any, **kwargs: Any) -> Any:
        if route.method == "POST" and route.path.endswith("/messages"):
            posts["n"] += 1
            if posts["n"] == 2:
                fake.fail_next("POST", MESSAGES, status=503)
        return await original(self, route, **kwargs)

    monkeypatch.setattr(discord.http.HTTPClient, "request", request)


def test_a_split_reply_cut_off_after_its_first_part_posts_only_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = "\n".join(f"line {i:03d} " + "x" * 40 for i in range(60))

    async def scenario() -> None:
        async with world(monkeypatch, attempts=1) as w, outbox_of(w.sender) as (outbox, store):
            asked = await w.asks("the full log, please")
            await queue(store, reply(asked, text))
            fail_second_post(monkeypatch, w.fake)

            assert await outbox.drain() == 0
            assert [row[1] for row in outbox_rows(store)] == ["ambiguous"]
            assert len(w.by(D_LEAD)) == 1

            assert await outbox.drain() == 1

            first, second = w.by(D_LEAD)
            assert first["content"].startswith("line 000") and second["content"].endswith("x")
            assert [c.status for c in w.posts()] == [200, 503, 200]
            assert outbox_rows(store)[0][3]["messageIds"] == [first["id"], second["id"]]

    run(scenario())


def test_a_forbidden_channel_fails_for_good_and_a_lost_answer_is_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch, attempts=1) as w:
            asked = await w.asks("anyone?")
            w.fake.fail_next("POST", MESSAGES, status=403)
            with pytest.raises(PermanentSendError, match="403"):
                await w.sender.send(reply(asked, "here"))

            lose_answers(monkeypatch, 1)
            with pytest.raises(SendOutcomeUnknown):
                await w.sender.send(reply(asked, "here", key="k2"))

    run(scenario())


def test_an_action_that_names_no_agent_fails_for_good_without_a_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w, outbox_of(w.sender) as (outbox, store):
            asked = await w.asks("anyone?")
            record = to_record(react(asked, "seen"))
            del record["agent"]
            await queue(store, {**record, "idempotencyKey": "k-without-agent"})
            calls = len(w.fake.calls)

            assert await outbox.drain() == 0

            ((_, status, attempts, result),) = outbox_rows(store)
            assert (status, attempts) == ("failed", 0) and "names no agent" in result["error"]
            assert len(w.fake.calls) == calls and w.fake.reactions == set()

    run(scenario())


# -- typing -------------------------------------------------------------------------------------


def typing_action(state: str, **extra: Any) -> Working:
    action = Working(
        agent="lead", platform="discord", conversation=CHANNEL, key="k", on=state == "start"
    )
    return replace(action, **extra)


def test_typing_is_shown_and_stopped_and_a_reply_stops_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            typing_path = f"/channels/{CHANNEL}/typing"
            assert await w.sender.send(typing_action("start")) == {"typing": "started"}
            assert await w.sender.send(typing_action("start")) == {"typing": "started"}
            assert len(w.posts(typing_path)) == 1  # one indicator, not two
            assert w.sender.typing.tasks

            assert await w.sender.send(typing_action("stop")) == {"typing": "stopped"}
            assert not w.sender.typing.tasks

            await w.sender.send(typing_action("start"))
            asked = await w.asks("and?")
            await w.sender.send(reply(asked, "done"))
            assert not w.sender.typing.tasks  # the reply ended it
            assert len(w.posts(typing_path)) == 2

    run(scenario())


def test_typing_ends_by_itself_at_the_hard_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with world(monkeypatch, typing_timeout=0.05) as w:
            await w.sender.send(typing_action("start", timeout_s=600))
            (task,) = w.sender.typing.tasks.values()

            async with asyncio.timeout(2):
                await task

            assert not w.sender.typing.tasks

    run(scenario())


# -- the agent's own messages -------------------------------------------------------------------


def test_an_agent_edits_and_deletes_its_own_message(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("is the deploy done?")
            sent = await w.sender.send(reply(asked, "not yet"))
            base: dict[str, Any] = {
                "agent": "lead",
                "platform": "discord",
                "conversation": CHANNEL,
                "message_id": sent["messageId"],
            }
            await w.sender.send(Edit(**base, text="done @everyone", key="k1:edit"))
            edits = [c for c in w.fake.calls if c.method == "PATCH"]
            assert len(edits) == 1 and edits[0].json["content"] == "done @everyone"
            assert edits[0].json["allowed_mentions"]["parse"] == []
            await w.sender.send(Delete(**base, key="k1:delete"))
            again = await w.sender.send(Delete(**base, key="k1:d2"))
            assert again["deleted"] is True
            assert [c.method for c in w.fake.calls if c.method == "DELETE"][:1] == ["DELETE"]

    run(scenario())
