"""An agent's files on Discord: one multipart message (discord.py's `discord.File`s) under the
nonce its text part always had, so a retry is recognised; and a 30,000-character answer, from
the agent's reply through the agent port and the outbox, arrives as `answer.md` with a summary."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from builders import D_LEAD, discord_message
from builders import local_workspace as workspace_with
from test_discord_send import CHANNEL, lose_answers, reply, run, world

from adapters.discord import normalise
from adapters.discord.plugin import DRAFT_LIMIT
from adapters.discord.render import nonce_for
from core.clock import VirtualClock
from core.emission import Delivery
from core.engine import Engine
from core.engine_port import EnginePort
from core.outbox import Outbox
from core.post_files import ATTACHED_NOTE, PostFile
from core.sqlite_store import SQLiteStore
from harness_bridge.tools import ChatTools

LOG = PostFile("deploy.log", "step 3: exit 1\n")


def test_an_agent_s_file_goes_with_its_message_under_the_same_nonce(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("what failed?")
            lose_answers(monkeypatch, 1)  # the first answer is lost: the retry is recognised

            result = await w.sender.send(replace(reply(asked, "The log:"), files=(LOG,)))

            first, again = w.posts()
            assert first.json["nonce"] == again.json["nonce"] == nonce_for("k1", 0)
            (posted,) = w.by(D_LEAD)
            assert result["messageId"] == posted["id"] and posted["content"] == "The log:"
            assert [a["filename"] for a in posted["attachments"]] == ["deploy.log"]
            assert w.fake.uploads.received[-1].text == LOG.content

    run(scenario())


def test_a_30000_character_answer_arrives_on_discord_as_a_file_and_a_summary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer = "Short version: the cache was cold.\n\n" + "more detail, line by line. " * 1_200

    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks(f"<@{D_LEAD}> why so slow?")
            store = SQLiteStore()
            await store.open()
            clock = VirtualClock(datetime(2026, 1, 1, 0, 0, 10, tzinfo=UTC))
            engine = Engine(workspace_with(), store, clock)
            event = normalise(
                discord_message(asked, f"<@{D_LEAD}> why so slow?", mentions=[D_LEAD])
            )
            assert event is not None
            async with store.transaction():
                outcome = await engine.ingest(event, "lead")
            (told,) = [e for e in outcome.emissions if isinstance(e, Delivery)]
            tools = ChatTools(EnginePort(engine, "lead", limits={"discord": DRAFT_LIMIT}))

            sent = await tools.reply_with_text([told.decision.event_id], answer)
            await Outbox(store, clock, {"discord": w.sender}).drain()

            assert sent is not None
            entry = await store.outbox_get(sent["idempotencyKey"])
            assert entry is not None and entry.status == "sent"
            (posted,) = w.by(D_LEAD)
            assert posted["channel_id"] == CHANNEL
            assert posted["content"] == f"Short version: the cache was cold.\n\n{ATTACHED_NOTE}"
            (upload,) = w.fake.uploads.received
            assert (upload.filename, upload.text) == ("answer.md", answer.strip())
            await store.close()

    assert len(answer) > 30_000
    run(scenario())
