"""The web chat: its payloads normalised, and the live page's websocket through a real host.

The live tests (`live_webchat`) run the real aiohttp server on 127.0.0.1 with a SQLite ledger,
talk to it over a real websocket, and read what the host decided from the ledger, as the page
does. Who may talk to it is tested in `test_access.py`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from live_webchat import Chat, run

from adapters.webchat.normalise import event_id, find_mentions, normalise
from core.action_records import from_record
from core.actions import Action, Delete, Edit, Post, React
from core.clock import format_time
from core.decision import Policy
from core.errors import PayloadError
from core.events import Broadcast, ConversationKind, EventKind
from core.outbox import PermanentSendError
from core.signals import Signal
from core.store import QuarantineRecord, StoredDelivery

TS = "2026-11-22T14:00:00.000001Z"


def payload(**fields: Any) -> dict[str, Any]:
    base = {"type": "message", "workspace": "local", "id": "7", "channel": "general"}
    return {**base, "user": "ana", "ts": TS, "text": "hi", **fields}


# ---- normalising ----------------------------------------------------------------------------


def test_mentions_are_agents_people_roles_and_broadcasts_named_with_at() -> None:
    found = find_mentions(
        "@lead and @backend, @here; mail ana@lead.io, @nobody, @lead again",
        users=["lead", "ana"],
        roles=["backend"],
    )
    assert found.users == ("lead",)
    assert found.roles == ("backend",)
    assert found.broadcast == (Broadcast.HERE,)


def test_a_mention_is_read_in_any_case_as_the_name_it_writes() -> None:
    found = find_mentions("@LEAD and @Ana, ask @BackEnd @Here", ["lead", "ana"], ["backend"])
    assert (found.users, found.roles, found.broadcast) == (
        ("lead", "ana"),
        ("backend",),
        (Broadcast.HERE,),
    )


def test_a_message_keeps_its_mentions_thread_and_reply() -> None:
    event = normalise(
        payload(
            thread="3",
            replyTo="5",
            mentions={"users": ["lead"], "roles": ["backend"], "broadcast": ["channel"]},
        )
    )
    assert event is not None
    assert event.event_id == "webchat:local:7" == event_id("local", "7")
    assert event.kind is EventKind.MESSAGE
    assert event.conversation.kind is ConversationKind.THREAD
    assert event.conversation.key == "general/3"
    assert (event.mentions.users, event.mentions.roles) == (("lead",), ("backend",))
    assert event.mentions.broadcast == (Broadcast.CHANNEL,)
    assert event.reply_to == "5"
    assert event.message_id == "7"


def test_a_dm_channel_is_a_direct_message() -> None:
    event = normalise(payload(channel="dm:ana:lead"))
    assert event is not None and event.conversation.kind is ConversationKind.DM


def test_edits_deletes_reactions_typing_and_joins_get_their_own_ids() -> None:
    edit = normalise(payload(type="edit", ts="2026-11-22T14:00:05Z", text="hi there"))
    delete = normalise(payload(type="delete"))
    reaction = normalise(payload(type="reaction_added", user="lead", emoji="👀"))
    typing = normalise(payload(type="typing"))
    joined = normalise(payload(type="member_joined", user="lead"))
    assert edit is not None and edit.event_id == "webchat:local:7~2026-11-22T14:00:05Z"
    assert edit.kind is EventKind.EDIT and edit.text == "hi there"
    assert delete is not None and delete.event_id == "webchat:local:7~deleted"
    assert reaction is not None and reaction.reaction == "👀"
    assert reaction.event_id == f"webchat:local:7+lead:👀@{TS}"
    assert typing is not None and typing.kind is EventKind.TYPING
    assert joined is not None and joined.kind is EventKind.MEMBER_JOINED
    assert joined.user_id == "lead"


def test_unknown_types_are_ignored_and_bad_fields_named() -> None:
    assert normalise(payload(type="huddle")) is None
    with pytest.raises(PayloadError, match="channel"):
        normalise(payload(channel=None))
    with pytest.raises(PayloadError, match="ts"):
        normalise(payload(ts="yesterday"))
    with pytest.raises(PayloadError, match=r"mentions\.users"):
        normalise(payload(mentions={"users": "lead"}))


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"type": 10**5000}, None),  # not a type it knows: ignored, never turned into text
        ({"ts": "99999-01-01T00:00:00Z"}, "ts"),
        ({"ts": "0001-01-01T00:00:00+05:00"}, "ts"),
        ({"ts": "9999-12-31T23:59:59-05:00"}, "ts"),
        ({"text": "x" * 200_000}, "text"),
        ({"id": "7" * 5000}, "id"),
        ({"thread": "3" * 5000}, "thread"),
        ({"mentions": {"users": ["a" * 5000]}}, "mentions.users"),
        ({"user": ["ana"]}, "user"),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 30 else "-",
)
def test_absurd_values_and_over_long_strings_raise_payload_error_naming_the_field(
    fields: dict[str, Any], field: str | None
) -> None:
    if field is None:
        assert normalise(payload(**fields)) is None
        return
    with pytest.raises(PayloadError) as raised:
        normalise(payload(**fields))
    assert raised.value.details == {"field": field}
    assert len(raised.value.message) < 200  # the value is quoted short, never whole


@pytest.mark.parametrize("body", [[], "message", 7, None])
def test_a_payload_that_is_not_an_object_raises_payload_error(body: Any) -> None:
    with pytest.raises(PayloadError, match="object"):
        normalise(body)


# ---- the live page ----------------------------------------------------------------------------


def test_the_page_and_its_assets_are_served(tmp_path: Path) -> None:
    async def scenario(chat: Chat) -> None:
        # As a browser: the printed URL leaves the token in a cookie, which then opens the rest.
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async with http.get(chat.chat.url) as response:
                assert (response.status, response.content_type) == (200, "text/html")
                scripts = re.findall(r'<script src="([^"]+)">', await response.text())
            assert scripts == ["/text.js", "/page.js"]  # the text helpers before what uses them
            for script in scripts:
                async with http.get(chat.chat.origin + script) as response:
                    assert (response.status, response.content_type) == (200, "text/javascript")
        hello = await chat.frame(lambda f: f["op"] == "hello")
        assert hello["humans"] == ["ana", "ben"]
        assert hello["agents"] == ["lead", "worker-1", "worker-2"]
        assert hello["channels"] == ["general", "ops"]
        assert hello["dms"]["ana"]["lead"] == "dm:ana:lead"

    run(tmp_path, scenario)


def test_a_mention_is_decided_and_shown_beside_the_message(tmp_path: Path) -> None:
    async def scenario(chat: Chat) -> None:
        await chat.request("post", channel="general", text="@lead can you check the deploy?")
        posted = await chat.frame(lambda f: f["op"] == "message")
        message_id = posted["message"]["id"]
        chips = await chat.attention(message_id)
        assert chips["lead"]["directedness"] == "to_me"
        assert chips["lead"]["policy"] == "must_respond"
        assert chips["worker-1"]["directedness"] == "to_other"
        assert chips["worker-1"]["policy"] == "must_not_respond"
        # The ledger holds it, decided, before the page showed it.
        deliveries = await chat.store.deliveries(event_id("local", message_id))
        assert {d.decision.agent for d in deliveries} == {"lead", "worker-1", "worker-2"}

    run(tmp_path, scenario)


def test_plain_chatter_is_ambient_and_goes_to_the_mailbox(tmp_path: Path) -> None:
    async def scenario(chat: Chat) -> None:
        await chat.request("post", channel="general", text="lunch is at noon today")
        posted = await chat.frame(lambda f: f["op"] == "message")
        chips = await chat.attention(posted["message"]["id"])
        for chip in chips.values():
            assert (chip["directedness"], chip["policy"], chip["mode"]) == (
                "ambient",
                "must_not_respond",
                "tool_mailbox",
            )

    run(tmp_path, scenario)


def test_an_agent_reply_is_posted_once_however_often_it_is_sent(tmp_path: Path) -> None:
    async def scenario(chat: Chat) -> None:
        asked = await chat.chat.say("ana", "dm:ana:lead", "are you there?")
        record = {
            "action": "send",
            "agent": "lead",
            "platform": "webchat",
            "conversation": "dm:ana:lead",
            "thread": None,
            "text": "yes, @ben is not pinged by this text",
            "mentions": [],
            "inReplyTo": event_id("local", asked.id),
            "idempotencyKey": "k1",
        }
        action = from_record(record)
        first = await chat.sender.send(action)
        again = await chat.sender.send(action)
        assert first == again
        assert await chat.sender.find(action) == {"messageId": first["messageId"]}
        replies = [m for m in chat.chat.history if m.user == "lead"]
        assert len(replies) == 1 and replies[0].reply_to == asked.id
        # The agent's own message came back to the host, like a platform's echo, and pings
        # nobody: mentions are only what the agent chose.
        echoed = await chat.host.engine.event(event_id("local", first["messageId"]))
        assert echoed is not None and not echoed.mentions
        # Nor does an edit of it, whatever names the new text holds.
        edit = {**record, "action": "edit", "messageId": first["messageId"], "text": "@ben hi"}
        await chat.sender.send(from_record(edit))
        edited = chat.chat.history.messages[first["messageId"]]
        assert edited.text == "@ben hi" and edited.view()["mentions"] == []

    run(tmp_path, scenario)


def test_a_draft_edit_shows_on_the_page_only_and_never_posts_a_message(tmp_path: Path) -> None:
    """A reply being streamed is redrawn with `draft` edits: the page gets the new text, the
    record and the host get nothing; a draft of a deleted or unknown message fails for good
    and posts nothing."""

    async def scenario(chat: Chat) -> None:
        asked = await chat.chat.say("ana", "general", "@lead status?")
        sent = await chat.sender.send(
            from_record(
                {
                    "action": "send",
                    "agent": "lead",
                    "platform": "webchat",
                    "conversation": "general",
                    "text": "The deploy",
                    "mentions": [],
                    "inReplyTo": event_id("local", asked.id),
                    "idempotencyKey": "k1",
                }
            )
        )
        shown: list[dict[str, Any]] = []

        async def broadcast(body: dict[str, Any]) -> None:
            shown.append(body)

        chat.chat._broadcast = broadcast  # type: ignore[method-assign]
        recorded = chat.chat.history.path.read_text()  # type: ignore[union-attr]
        ledger = chat.host.engine.store.db.execute("SELECT COUNT(*) FROM events").fetchone()
        draft = {
            "action": "edit",
            "draft": True,
            "agent": "lead",
            "platform": "webchat",
            "conversation": "general",
            "messageId": sent["messageId"],
            "text": "The deploy is green",
            "idempotencyKey": "k1:draft:1",
        }
        assert await chat.sender.send(from_record(draft)) == {"messageId": sent["messageId"]}
        [frame] = shown
        assert frame["op"] == "message" and frame["message"]["id"] == sent["messageId"]
        assert frame["message"]["text"] == "The deploy is green"
        assert chat.chat.history.path.read_text() == recorded  # type: ignore[union-attr]
        assert chat.host.engine.store.db.execute("SELECT COUNT(*) FROM events").fetchone() == ledger
        assert chat.chat.history.messages[sent["messageId"]].text == "The deploy"

        await chat.chat.change("delete", "lead", sent["messageId"])
        messages = len(chat.chat.history.messages)
        for gone in (sent["messageId"], "999"):
            with pytest.raises(PermanentSendError):
                await chat.sender.send(from_record({**draft, "messageId": gone}))
        assert len(chat.chat.history.messages) == messages

    run(tmp_path, scenario)


def test_a_status_signal_replaces_the_agents_earlier_one(tmp_path: Path) -> None:
    async def scenario(chat: Chat) -> None:
        asked = await chat.chat.say("ana", "general", "@lead deploy please")

        def react(signal: str) -> Action:
            return from_record(
                {
                    "action": "react",
                    "agent": "lead",
                    "platform": "webchat",
                    "conversation": "general",
                    "messageId": asked.id,
                    "signal": signal,
                    "idempotencyKey": f"k:{signal}",
                }
            )

        await chat.sender.send(react("seen"))
        await chat.sender.send(react("working"))
        assert asked.reactions == {"👀": [], "🔧": ["lead"]}
        await chat.sender.send(react("done"))
        assert {e: u for e, u in asked.reactions.items() if u} == {"✅": ["lead"]}

    run(tmp_path, scenario)


def test_a_signal_taken_back_leaves_the_others(tmp_path: Path) -> None:
    async def scenario(chat: Chat) -> None:
        asked = await chat.chat.say("ana", "general", "@backend who can look?")
        base = {"platform": "webchat", "conversation": "general", "messageId": asked.id}
        for agent, signal in (("worker-1", "blocked"), ("worker-2", "seen")):
            placed = {**base, "action": "react", "agent": agent, "signal": signal}
            await chat.sender.send(from_record({**placed, "idempotencyKey": f"k:{agent}"}))
        off = {**base, "action": "unreact", "agent": "worker-1", "signal": "blocked"}
        for _ in range(2):  # the second finds it gone: done all the same
            await chat.sender.send(from_record({**off, "idempotencyKey": "k:off"}))
        assert {e: u for e, u in asked.reactions.items() if u} == {"👀": ["worker-2"]}

    run(tmp_path, scenario)


def test_bad_requests_get_an_error_and_the_socket_stays_open(tmp_path: Path) -> None:
    async def scenario(chat: Chat) -> None:
        assert chat.socket is not None
        await chat.socket.send_str("not json")
        await chat.request("post", channel="general")
        await chat.request("post", channel="dm:ben:lead", text="not my DM")
        await chat.request("fly", channel="general")
        await chat.socket.send_str('{"op": "drop_tables"}')  # said before any missing field
        await chat.socket.send_bytes(b'{"op": "post"}')
        # Half of a UTF-16 pair: JSON, but not Unicode text; before, the history's write failed
        # and the socket closed with a traceback in the log.
        await chat.socket.send_str(
            '{"op": "post", "as": "ana", "channel": "general", "text": "hi \\ud800 there"}'
        )
        errors = []
        for _ in range(7):
            frame = await chat.frame(lambda f: f["op"] == "error" and f not in errors)
            errors.append(frame)
        texts = [e["text"] for e in errors]
        assert "not JSON" in texts[0]
        assert "text must be a non-empty string" in texts[1]
        assert "cannot post in 'dm:ben:lead'" in texts[2]
        assert texts[3] == "unknown op 'fly': one of post, typing, edit, delete, react, unreact"
        assert texts[4].startswith("unknown op 'drop_tables'")
        assert texts[5] == "a request is a JSON text frame, not a binary one"
        assert texts[6].startswith("not JSON") and "surrogate" in texts[6]
        await chat.request("post", channel="general", text="still here")
        await chat.frame(lambda f: f["op"] == "message")

    run(tmp_path, scenario)


def test_blank_edits_odd_reactions_and_threads_that_are_not_there_are_refused(
    tmp_path: Path,
) -> None:
    async def scenario(chat: Chat) -> None:
        mine = await chat.chat.say("ana", "general", "first words")
        reply = await chat.chat.say("ana", "general", "in its thread", thread=mine.id)
        elsewhere = await chat.chat.say("ana", "ops", "in another channel")
        refused = [
            ("edit", {"id": mine.id, "text": "  \n "}, "an empty message is not sent"),
            ("edit", {"id": mine.id, "text": "x" * 65_537}, "65,537 characters, at most 65,536"),
            ("post", {"channel": "general", "text": "@lead " + "x" * 70_000}, "70,006 characters"),
            ("react", {"id": mine.id, "emoji": "\x1b[2J"}, "without spaces or control"),
            ("react", {"id": mine.id, "emoji": "\u202eok"}, "without spaces or control"),
            ("react", {"id": mine.id, "emoji": "x" * 33}, "at most 32 characters"),
            ("post", {"channel": "general", "thread": "nope", "text": "hi"}, "no message 'nope'"),
            ("post", {"channel": "general", "thread": elsewhere.id, "text": "hi"}, "in 'general'"),
            ("typing", {"channel": "dm:ben:lead"}, "cannot post in 'dm:ben:lead'"),
        ]
        for op, fields, _ in refused:
            await chat.request(op, **fields)
        errors = await chat.frames_of("error", len(refused))
        for (op, _, why), error in zip(refused, errors, strict=True):
            assert why in error["text"], (op, error)
        message = chat.chat.history.messages[mine.id]
        assert message.text == "first words" and not message.reactions
        assert len(chat.chat.history.messages) == 3  # nothing refused was kept
        # A reply's id names its thread: the post goes to the thread's first message.
        await chat.request("post", channel="general", thread=reply.id, text="and more 👍")
        more = await chat.frame(
            lambda f: f["op"] == "message" and "and more" in f["message"]["text"]
        )
        assert more["message"]["thread"] == mine.id
        await chat.request("react", id=mine.id, emoji="👩🏽‍💻")
        await chat.frame(lambda f: f["op"] == "message" and "👩🏽‍💻" in f["message"]["reactions"])

    run(tmp_path, scenario)


def test_c2a_typed_in_the_page_is_answered_to_that_person_alone_and_never_posted(
    tmp_path: Path,
) -> None:
    async def scenario(chat: Chat) -> None:
        asked = await chat.chat.say("ana", "general", "@lead can you check the deploy?")
        await chat.frame(lambda f: f["op"] == "attention" and f["id"] == asked.id)
        await chat.request("post", channel="general", text="/c2a status")
        status = await chat.frame(lambda f: f["op"] == "notice")
        assert "lead: " in status["text"] and "worker-1: " in status["text"]
        assert "*" not in status["text"]  # the page shows text as typed: no bold marks
        await chat.request("post", channel="general", text=f"/c2a why #{asked.id}")
        why = await chat.frame(lambda f: f["op"] == "notice" and f is not status)
        assert "direct_mention" in why["text"]
        await chat.request("post", channel="general", text="/c2a mute lead 1h")
        refused = await chat.frame(lambda f: f["op"] == "notice" and f not in (status, why))
        assert "approvers" in refused["text"]  # nobody is an approver in the local manifest
        # None of it is a message: the record and the ledger hold only the question.
        assert [m.text for m in chat.chat.history] == ["@lead can you check the deploy?"]
        rows = chat.store.db.execute("SELECT COUNT(*) FROM events WHERE kind = 'chat.message'")
        assert rows.fetchone() == (1,)

    run(tmp_path, scenario)


def test_people_edit_and_delete_only_their_own_messages(tmp_path: Path) -> None:
    async def scenario(chat: Chat) -> None:
        theirs = await chat.chat.say("ben", "general", "ben's words")
        await chat.request("delete", id=theirs.id)
        refused = f"only the author of message {theirs.id} can delete it"
        await chat.frame(lambda f: f["op"] == "error" and f["text"] == refused)
        await chat.request("edit", id="999", text="words")
        await chat.frame(lambda f: f["op"] == "error" and f["text"] == "no message '999' to edit")
        mine = await chat.chat.say("ana", "general", "@lead look at this")
        await chat.request("edit", id=mine.id, text="@lead look at this, please")
        await chat.frame(lambda f: f["op"] == "message" and f["message"]["edited"])
        await chat.request("delete", id=mine.id)
        gone = await chat.frame(lambda f: f["op"] == "message" and f["message"]["deleted"])
        assert gone["message"]["text"] == ""
        assert chat.chat.history.messages[theirs.id].deleted is False

    run(tmp_path, scenario)


def test_a_deleted_message_is_edited_and_reacted_to_by_nobody(tmp_path: Path) -> None:
    """Its words are gone: a person's edit or reaction is refused, and so is an agent's edit
    (for good, not retried); an agent's delete of it again changes nothing."""

    async def scenario(chat: Chat) -> None:
        mine = await chat.chat.say("ana", "general", "@lead the password is hunter2")
        await chat.request("delete", id=mine.id)
        await chat.frame(lambda f: f["op"] == "message" and f["message"]["deleted"])
        await chat.request("edit", id=mine.id, text="@lead it is hunter3")
        await chat.frame(lambda f: f["op"] == "error" and "was deleted" in f["text"])
        await chat.request("react", id=mine.id, emoji="👍")
        await chat.frame(lambda f: f["op"] == "error" and "was deleted" in f["text"])
        lead: dict[str, Any] = {"agent": "lead", "platform": "webchat", "conversation": "general"}
        said = await chat.sender.send(Post(**lead, key="k1", text="hi"))
        edit = Edit(**lead, key="k2", message_id=said["messageId"], text="bye")
        gone = Delete(**lead, key="k3", message_id=said["messageId"])
        await chat.sender.send(gone)
        assert await chat.sender.send(gone) == {"messageId": said["messageId"]}
        with pytest.raises(PermanentSendError, match="was deleted"):
            await chat.sender.send(edit)
        # A 👀 that was on its way when the question went has nothing to mark: done, no error.
        seen = React(**lead, key="k4", message_id=mine.id, signal=Signal.SEEN)
        assert (await chat.sender.send(seen))["gone"] is True
        assert "hunter3" not in (tmp_path / "webchat.jsonl").read_text()

    run(tmp_path, scenario)


def test_a_restart_reads_the_record_back_and_loses_nothing(tmp_path: Path) -> None:
    async def first(chat: Chat) -> None:
        await chat.chat.say("ana", "general", "@lead one")
        await chat.chat.say("ana", "general", "two")

    async def second(chat: Chat) -> None:
        assert [m.text for m in chat.chat.history] == ["@lead one", "two"]
        third = await chat.chat.say("ana", "general", "three")
        assert third.id == "3"
        hello = await chat.frame(lambda f: f["op"] == "hello")
        assert [m["text"] for m in hello["messages"]] == ["@lead one", "two"]

    run(tmp_path, first)
    run(tmp_path, second)


def test_a_restart_hands_the_host_only_what_its_ledger_lacks(tmp_path: Path) -> None:
    """The record keeps a line before the host has it: a crash between the two leaves a line
    the ledger lacks, which the next start hands over to be decided; the rest is in already."""

    async def first(chat: Chat) -> None:
        await chat.chat.say("ana", "general", "@lead one")
        await chat.chat.say("ana", "general", "two")

    run(tmp_path, first)
    cut_off = payload(id="3", text="@lead three", mentions={"users": ["lead"]})
    cut_off["ts"] = format_time(datetime.now(UTC))
    with (tmp_path / "webchat.jsonl").open("ab") as record:
        record.write(orjson.dumps(cut_off) + b"\n")
    handed: list[str] = []

    async def second() -> StoredDelivery:
        chat = Chat(tmp_path)
        receive = chat.chat.receive

        async def counted(platform: str, data: Mapping[str, Any], via: str | None) -> Any:
            handed.append(data.get("id", data["type"]))
            return await receive(platform, data, via)

        chat.chat.receive = counted
        await chat.host.start()
        await chat.chat.start()
        try:
            return next(
                d
                for d in await chat.store.deliveries(event_id("local", "3"))
                if d.decision.agent == "lead"
            )
        finally:
            await chat.chat.close()
            await chat.host.close()

    assert asyncio.run(second()).decision.policy is Policy.MUST_RESPOND
    assert handed == ["3"]


def test_a_reaction_put_on_again_is_not_handed_over_again_at_each_start(tmp_path: Path) -> None:
    """The ledger keeps a reaction added again after its removal under the engine's next
    generation (`…#2`): a start finds it there, and hands nothing of it over again."""

    def reactions(chat: Chat) -> int:
        rows = chat.store.db.execute(
            "SELECT COUNT(*) FROM events WHERE id LIKE 'webchat:local:1+%'"
        )
        return int(rows.fetchone()[0])

    async def first(chat: Chat) -> None:
        said = await chat.chat.say("ana", "general", "@lead ship it?")
        for kind in ("reaction_added", "reaction_removed") * 2:
            await chat.chat.change(kind, "ben", said.id, emoji="👍")
        assert reactions(chat) == 4

    async def again(chat: Chat) -> None:
        assert reactions(chat) == 4

    run(tmp_path, first)
    run(tmp_path, again)
    run(tmp_path, again)


def test_a_new_ledger_beside_an_old_record_is_asked_nothing_of_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The ledger deleted, the record kept: what was said before stays on the page, and no
    agent is asked about it (a first run on Slack or Discord reads no history either); who
    joined where is handed over, and what is said now is decided as ever."""

    async def first(chat: Chat) -> None:
        await chat.chat.say("ana", "general", "@lead one")
        await chat.chat.say("ana", "general", "@lead two?")

    run(tmp_path, first)
    (tmp_path / "ledger.sqlite3").unlink()

    async def second(chat: Chat) -> None:
        assert [m.text for m in chat.chat.history] == ["@lead one", "@lead two?"]
        for old in ("1", "2"):
            assert await chat.store.deliveries(event_id("local", old)) == []
        joined = await chat.store.held(["webchat:local:joined:general:lead"])
        assert joined == {"webchat:local:joined:general:lead"}
        three = await chat.chat.say("ana", "general", "@lead three?")
        (lead,) = [
            d
            for d in await chat.store.deliveries(event_id("local", three.id))
            if d.decision.agent == "lead"
        ]
        assert lead.decision.policy is Policy.MUST_RESPOND

    with caplog.at_level("WARNING"):
        run(tmp_path, second)
    assert "holds 2 message(s) from before this ledger" in caplog.text


TYPING = {"op": "typing", "channel": "general", "thread": None, "on": True}


def test_an_ephemeral_post_is_shown_to_the_person_the_host_names_alone_and_kept_nowhere(
    tmp_path: Path,
) -> None:
    """A turn budget's notice: on the pages that spoke as the asker, as a `/c2a` answer is;
    not on another person's page, not in the record."""

    async def scenario(chat: Chat) -> None:
        async with (
            aiohttp.ClientSession() as http,
            http.ws_connect(chat.chat.link("/ws"), origin=chat.chat.origin) as other,
        ):
            await other.send_json({"op": "typing", "as": "ben", "channel": "general"})
            await chat.request("post", channel="general", text="@lead one more question")
            asked = await chat.frame(lambda f: f["op"] == "message")
            asked_id = f"webchat:{chat.chat.workspace}:{asked['message']['id']}"
            notice = Post(
                agent="lead",
                platform="webchat",
                conversation="general",
                key="lead:budget:ana:2026-01-01T01:00:00Z",
                text="I can answer you again at 01:00 UTC",
                visibility="ephemeral",
                in_reply_to=asked_id,
                person="ana",
            )
            assert await chat.sender.send(notice) == {"pages": 1}
            shown = await chat.frame(lambda f: f["op"] == "notice")
            assert shown["text"] == "I can answer you again at 01:00 UTC"
            # Then ana types, which every page is shown: ben's page has had whatever came
            # before it, and a notice sent there would have come first.
            await chat.request("typing", channel="general")
            other_frames = []
            async with asyncio.timeout(5):
                while not other_frames or other_frames[-1] != {**TYPING, "user": "ana"}:
                    other_frames.append(await other.receive_json())
            assert all(f["op"] != "notice" for f in other_frames)
        assert [m.text for m in chat.chat.history] == ["@lead one more question"]
        with pytest.raises(PermanentSendError, match="goes to one of the people here"):
            await chat.sender.send(replace(notice, person=None))

    run(tmp_path, scenario)


def test_a_dm_post_from_a_channel_goes_to_the_persons_dm_never_the_channel(
    tmp_path: Path,
) -> None:
    """Visibility `dm` is the agent choosing to say it privately, as on Slack and Discord: to
    the person the host names (`core.guards.check_audience`), one of the people here; never
    the channel it was asked in."""

    async def scenario(chat: Chat) -> None:
        asked = await chat.chat.say("ana", "general", "@lead a private word?")
        answer = Post(
            agent="lead",
            platform="webchat",
            conversation="general",
            key="k-dm",
            text="here, privately",
            visibility="dm",
            in_reply_to=event_id("local", asked.id),
            person="ana",
        )
        await chat.sender.send(answer)
        await chat.sender.send(replace(answer, key="k-ben", person="ben"))
        posted = [(m.channel, m.text, m.reply_to) for m in chat.chat.history if m.user == "lead"]
        assert posted == [
            ("dm:ana:lead", "here, privately", None),
            ("dm:ben:lead", "here, privately", None),
        ]
        for stranger in ("mallory", "worker-1", None):
            with pytest.raises(PermanentSendError, match="a dm post goes to one of the people"):
                await chat.sender.send(replace(answer, key="k-x", person=stranger))

    run(tmp_path, scenario)


@pytest.mark.parametrize(
    "body", ["not json", '{"as": "ana"}', "[" * 100_000 + "]" * 100_000], ids=str.__len__
)
def test_a_press_that_is_not_one_is_refused_with_400(tmp_path: Path, body: str) -> None:
    async def scenario(chat: Chat) -> None:
        headers = {"Origin": chat.chat.origin, "Content-Type": "application/json"}
        async with (
            aiohttp.ClientSession() as http,
            http.post(chat.chat.link("/approve"), data=body, headers=headers) as answer,
        ):
            assert answer.status == 400
            assert await answer.json() == {"refused": "a press names as, request and choice"}

    run(tmp_path, scenario)


def test_an_agent_posts_only_into_a_thread_that_is_there_as_a_person_does(
    tmp_path: Path,
) -> None:
    """A thread is named by any message of it (the reply's id names its root's thread); one
    that is not in the conversation is refused, where it would have hidden the post."""

    async def scenario(chat: Chat) -> None:
        root = await chat.chat.say("ana", "general", "deploy notes")
        reply = await chat.chat.say("ben", "general", "first", thread=root.id)
        post = Post(agent="lead", platform="webchat", conversation="general", key="t", text="x")
        await chat.sender.send(replace(post, thread=reply.id))
        assert [m.thread for m in chat.chat.history if m.user == "lead"] == [root.id]
        for ghost in ("9999", root.id):
            with pytest.raises(PermanentSendError, match="to reply to in a thread"):
                await chat.sender.send(
                    replace(post, key=f"t{ghost}", conversation="ops", thread=ghost)
                )

    run(tmp_path, scenario)


def test_an_agents_answer_finished_by_an_edit_is_still_not_for_the_others(tmp_path: Path) -> None:
    """The lead answers ana's question in a thread worker-1 is in, and finishes the answer with
    an edit (as a streamed answer is finished): the edit answers what the post answered, so
    worker-1 may not answer it, as it may not answer the post (the page's edit names no
    reply; the host takes it from the message)."""

    async def scenario(chat: Chat) -> None:
        root = await chat.chat.say("ben", "general", "@worker-1 the build is red")
        lead: dict[str, Any] = {"agent": "lead", "platform": "webchat", "conversation": "general"}
        worker = {**lead, "agent": "worker-1"}
        await chat.sender.send(Post(**worker, key="w", text="looking", thread=root.id))
        asked = await chat.chat.say("ana", "general", "@lead can you check it too?", thread=root.id)
        answer = Post(
            **lead, key="a", text="It is …", thread=root.id, in_reply_to=event_id("local", asked.id)
        )
        said = await chat.sender.send(answer)
        await chat.sender.send(Edit(**lead, key="e", message_id=said["messageId"], text="It is."))
        edited = f"{event_id('local', said['messageId'])}~%"
        (edit,) = chat.store.db.execute("SELECT id FROM events WHERE id LIKE ?", (edited,))
        decided = await chat.store.deliveries(edit[0])
        worker_1 = [d.decision for d in decided if d.decision.agent == "worker-1"]
        assert [d.policy for d in worker_1] == [Policy.MUST_NOT_RESPOND]

    run(tmp_path, scenario)


def test_a_line_the_host_cannot_read_is_quarantined_once_however_often_it_starts(
    tmp_path: Path,
) -> None:
    """A line the host refuses is never in the ledger, so every start hands it over again: the
    quarantine counts it on the record it kept the first time."""
    run(tmp_path, lambda chat: chat.chat.say("ana", "general", "@lead one"))
    unreadable = payload(id="2", text="@lead two")
    unreadable["ts"] = "yesterday"
    with (tmp_path / "webchat.jsonl").open("ab") as record:
        record.write(orjson.dumps(unreadable) + b"\n")

    async def start() -> list[QuarantineRecord]:
        chat = Chat(tmp_path)
        await chat.host.start()
        await chat.chat.start()
        try:
            return await chat.store.quarantined(10)
        finally:
            await chat.chat.close()
            await chat.host.close()

    (first,) = asyncio.run(start())
    assert (first.source, first.times) == ("webchat", 1)
    assert "ts" in first.reason
    (again,) = asyncio.run(start())
    assert (again.at, again.times) == (first.at, 2)
