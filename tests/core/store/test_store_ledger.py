"""The `Ledger` contract: events in append order, one per id, text that can be filled or erased,
receipts once per agent, and the newest message per conversation."""

from __future__ import annotations

from store_backends import Backend

from core.store import ConversationMark, LedgerEntry, Store

CHANNEL = {"conversation": {"id": "C1", "kind": "channel"}, "text": "hello"}


def test_append_numbers_events_in_order_and_refuses_a_second_copy_of_an_id(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> None:
        assert await store.append("e1", "message", "human:u", CHANNEL, "t1") == 1
        assert await store.append("e2", "message", "human:u", CHANNEL, "t2") == 2
        assert await store.append("e1", "message", "human:u", {"text": "again"}, "t3") is None
        assert await store.sequence_of("e2") == 2
        assert await store.sequence_of("nothing") is None
        assert await store.entry(1) == LedgerEntry(1, "e1", "t1", "message", "human:u", CHANNEL)
        assert await store.entry(3) is None

    backend.run(scenario)


def test_held_names_the_ids_the_ledger_has_of_any_number_asked(backend: Backend) -> None:
    async def scenario(store: Store) -> set[str]:
        async with store.transaction():
            for n in range(0, 1200, 2):
                await store.append(f"e{n}", "message", "human:u", CHANNEL, "t")
        assert await store.held([]) == set()
        return await store.held([f"e{n}" for n in range(1200)])

    assert backend.run(scenario) == {f"e{n}" for n in range(0, 1200, 2)}


def test_the_ledger_reads_back_in_sequence_order_after_a_point(backend: Backend) -> None:
    async def write(store: Store) -> None:
        async with store.transaction():
            for n in range(1, 6):
                await store.append(f"e{n}", "message", "human:u", {"n": n}, f"t{n}")

    async def read(store: Store) -> list[int]:
        return [entry.data["n"] async for entry in store.ledger(since_seq=2)]

    backend.run(write)
    assert backend.run(read) == [3, 4, 5]


def test_text_is_filled_only_where_missing_and_a_tombstone_erases_it_for_good(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> None:
        await store.append("blank", "message", "human:u", {"text": ""}, "t1")
        await store.append("said", "message", "human:u", {"text": "mine"}, "t2")
        await store.fill_text("blank", "arrived later")
        await store.fill_text("said", "not this")
        await store.fill_text("nothing", "ignored")
        await store.tombstone(["said", "nothing"])
        await store.fill_text("said", "back again?")
        blank, said = await store.entry(1), await store.entry(2)
        assert blank is not None and blank.data["text"] == "arrived later"
        assert said is not None and said.data == {"text": "", "deleted": True}

    backend.run(scenario)


def test_a_receipt_is_kept_once_per_agent(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        await store.append("e1", "message", "human:u", CHANNEL, "t1")
        assert await store.add_receipt("e1", "worker-1")
        assert await store.add_receipt("e1", "lead")
        assert not await store.add_receipt("e1", "lead")
        assert await store.receipts("e1") == ["lead", "worker-1"]
        assert await store.receipts("e2") == []

    backend.run(scenario)


def test_the_receipts_of_a_range_of_events_read_at_once_by_sequence_number(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> None:
        for n in range(1, 6):
            await store.append(f"e{n}", "message", "human:u", CHANNEL, f"t{n}")
        for event_id, agent in [("e2", "worker-1"), ("e2", "lead"), ("e3", "lead")]:
            await store.add_receipt(event_id, agent)
        await store.add_receipt("e5", "lead")
        await store.add_receipt("elsewhere", "lead")  # an event the ledger never took
        assert await store.receipts_between(1, 4) == {2: ["lead", "worker-1"], 3: ["lead"]}
        assert await store.receipts_between(0, 5) == {
            2: ["lead", "worker-1"],
            3: ["lead"],
            5: ["lead"],
        }
        assert await store.receipts_between(3, 4) == {}
        assert await store.receipts_between(5, 9) == {}

    backend.run(scenario)


def test_the_newest_message_of_each_conversation_is_its_mark(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
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

    backend.run(scenario)


def test_with_threads_each_thread_has_its_own_mark(backend: Backend) -> None:
    async def scenario(store: Store) -> None:
        top = {"conversation": {"id": "C1", "kind": "channel"}}
        thread = {"conversation": {"id": "C1", "kind": "thread", "thread_id": "1.0"}}
        await store.append("p:1", "message", "human:u", top, "t1")
        await store.append("p:2", "message", "human:u", thread, "t2")
        await store.append("p:3", "message", "human:u", top, "t3")

        assert await store.conversation_marks("p:", "message", threads=True) == [
            ConversationMark("C1", "thread", "p:2", "t2", "1.0"),
            ConversationMark("C1", "channel", "p:3", "t3", ""),
        ]
        assert await store.conversation_marks("p:", "message") == [
            ConversationMark("C1", "channel", "p:3", "t3")
        ]

    backend.run(scenario)


def _version(message_id: str, kind: str, conversation: str = "C1", platform: str = "slack") -> dict:
    conv = {"id": conversation, "kind": "channel"}
    return {"platform": platform, "conversation": conv, "message_id": message_id, "kind": kind}


def test_a_message_is_found_by_its_native_id_with_its_edits_and_nothing_else(
    backend: Backend,
) -> None:
    async def scenario(store: Store) -> None:
        await store.append("m1", "chat.message", "human:u", _version("100.1", "message"), "t1")
        await store.append("m2", "chat.message", "human:u", _version("100.2", "message"), "t2")
        await store.append("m1~e", "x.c2a.edit", "human:u", _version("100.1", "edit"), "t3")
        await store.append("r", "chat.reaction", "human:u", _version("100.1", "reaction"), "t4")
        other = _version("100.1", "message", conversation="C2")
        await store.append("m3", "chat.message", "human:u", other, "t5")
        elsewhere = _version("100.1", "message", platform="discord")
        await store.append("m4", "chat.message", "human:u", elsewhere, "t6")
        await store.tombstone(["m2"])
        found = await store.message_events("slack", "C1", "100.1")
        assert [(e.seq, e.id, e.kind) for e in found] == [
            (1, "m1", "chat.message"),
            (3, "m1~e", "x.c2a.edit"),
        ]
        assert found[0].data == _version("100.1", "message")
        gone = await store.message_events("slack", "C1", "100.2")
        assert [(e.id, e.data["deleted"], e.data["text"]) for e in gone] == [("m2", True, "")]
        assert await store.message_events("slack", "C1", "999.9") == []

    backend.run(scenario)


def test_a_nul_character_is_kept_as_a_replacement_and_the_rows_stay_readable(
    backend: Backend,
) -> None:
    # PostgreSQL's JSON cannot turn a `\\u0000` into text: one such row broke every query
    # that reads a field of its conversation's events. People and models can type one.
    said = {**_version("100.1", "message"), "text": "a\x00b", "author": {"name": "x\x00y"}}

    async def scenario(store: Store) -> None:
        await store.append("m1", "chat.message", "human:u", said, "t1")
        await store.append("m2", "chat.message", "human:u", _version("100.2", "message"), "t2")
        await store.fill_text("m2", "late \x00 words, \\u0000 as typed")
        (found,) = await store.message_events("slack", "C1", "100.1")
        assert (found.data["text"], found.data["author"]) == ("a\ufffdb", {"name": "x\ufffdy"})
        filled = await store.entry(2)
        assert filled is not None and filled.data["text"] == "late \ufffd words, \\u0000 as typed"
        await store.tombstone(["m1"])
        gone = await store.entry(1)
        assert gone is not None and gone.data["text"] == ""
        assert await store.put_outbox("k1", "lead", {"text": "out \x00 put"}, "t3")
        (queued,) = await store.outbox_due()
        assert queued.action["text"] == "out \ufffd put"

    backend.run(scenario)
