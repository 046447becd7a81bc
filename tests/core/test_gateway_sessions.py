"""The ledger keeps where each bot's gateway session stands, and the newest message per
conversation, on a real SQLite file that outlives the process that wrote it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from core.sqlite_store import SQLiteStore
from core.store import ConversationMark, GatewaySession

URL = "wss://gateway.example/resume"


def session(seq: int, session_id: str = "s-1", shard: int = -1) -> GatewaySession:
    return GatewaySession("lead", shard, session_id, URL, seq, f"2024-05-14T09:00:{seq:02d}Z")


def test_a_session_survives_a_reopen_and_its_seq_never_goes_back(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.sqlite3")

    async def scenario() -> None:
        store = SQLiteStore(path)
        await store.open()
        async with store.transaction():
            await store.save_gateway_session("discord", session(7))
        await store.save_gateway_session("discord", session(5))  # a replayed, older frame
        await store.save_gateway_session("discord", session(3, shard=1))
        await store.close()

        again = SQLiteStore(path)
        await again.open()  # the table is created idempotently
        assert await again.gateway_sessions("discord", "lead") == [
            session(7),
            session(3, shard=1),
        ]
        # A new session replaces the old one, whatever its seq.
        await again.save_gateway_session("discord", session(2, session_id="s-2"))
        [unsharded, _] = await again.gateway_sessions("discord", "lead")
        assert (unsharded.session_id, unsharded.seq) == ("s-2", 2)
        assert await again.gateway_sessions("discord", "worker-1") == []
        assert await again.gateway_sessions("slack", "lead") == []
        await again.close()

    asyncio.run(scenario())


def test_the_newest_message_of_each_conversation_is_its_mark() -> None:
    async def scenario() -> None:
        store = SQLiteStore()
        await store.open()
        channel = {"conversation": {"id": "C1", "kind": "channel"}}
        dm = {"conversation": {"id": "D1", "kind": "dm"}}
        await store.append("discord:1", "message", "human:u", channel, "t1")
        await store.append("discord:2", "message", "human:u", channel, "t2")
        await store.append("discord:2~edit", "edit", "human:u", channel, "t3")
        await store.append("discord:3", "message", "human:u", dm, "t4")
        await store.append("slack:T:C1:1.0", "message", "human:u", channel, "t5")
        await store.append("discord:typing", "typing", "human:u", channel, "t6")

        assert await store.conversation_marks("discord:", "message") == [
            ConversationMark("C1", "channel", "discord:2", "t2"),
            ConversationMark("D1", "dm", "discord:3", "t4"),
        ]
        assert await store.conversation_marks("webchat:", "message") == []
        await store.close()

    asyncio.run(scenario())
