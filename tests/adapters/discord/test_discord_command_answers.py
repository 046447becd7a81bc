"""`/c2a` answered at a live bot: the real discord.py takes each command the fake Discord sends
as an application command interaction (a subcommand and its options), core answers it on an
engine with a SQLite ledger, and the answer is an ephemeral message in Discord's markdown,
seen by the person alone; a private channel's words and decisions only for those who can view
it; mute, unmute and leave only for the agent's approvers, named by user
id or by role; a slow answer is deferred, then written; every command is audited."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import discord
import pytest
from builders import D_BACKEND_ROLE, D_W1, GUILD, discord_message, local_workspace
from discord_asking import ANA, APPLICATIONS, BEN, CHANNEL, lead_on_discord
from fakes.discord_commands import CommandInteractions, FakeDiscordWithCommands
from fakes.discord_interactions import DEFERRED_MESSAGE, EPHEMERAL, MESSAGE

from adapters.discord.commands import IN_TIME, listen_for_commands, one_message
from adapters.discord.interactions import Interactions
from adapters.discord.normalise import normalise
from adapters.discord.render import MESSAGE_LIMIT
from adapters.discord.send import DiscordSender
from core.clock import VirtualClock, parse_time
from core.command_answers import Commands
from core.command_text import HELP
from core.emission import Cancel, Emission
from core.engine import Engine
from core.sqlite_store import SQLiteStore

AT = parse_time("2026-01-01T00:00:00Z")
ASKED = "830000000000000001"  # the id of the message `why` asks about
LINK = f"https://discord.com/channels/{GUILD}/{CHANNEL}/{ASKED}"


@dataclass
class World:
    interactions: CommandInteractions
    engine: Engine
    store: SQLiteStore
    told: list[Emission]
    sender: DiscordSender

    async def run(self, user: str, name: str, channel: str = CHANNEL, **options: str) -> str:
        """`user` runs `/c2a <name>` with `options`: the answer only they see."""
        sent = await self.interactions.subcommand(
            channel, user, APPLICATIONS["lead"], name, **options
        )
        return await self.answer(sent)

    async def answer(self, sent: dict[str, Any]) -> str:
        """The answer to the command `sent`, once there is one; it must be ephemeral."""
        async with asyncio.timeout(5):
            while (answer := self.interactions.answer_to(sent)) is None:
                await asyncio.sleep(0.01)
        text, ephemeral = answer
        assert ephemeral, text
        return text

    def audited(self) -> list[tuple[str, str, dict[str, str]]]:
        rows = self.store.db.execute("SELECT agent, what, outcome, detail FROM audit")
        return [(a, o, json.loads(d)) for a, w, o, d in rows if w == "command"]


class Gated(Commands):
    """Commands whose answers wait for `gate`: an answer as slow as the test needs."""

    def __init__(self, engine: Engine, gate: asyncio.Event) -> None:
        super().__init__(engine)
        self.gate = gate

    async def answer(self, *args: Any, **kwargs: Any) -> str:
        await self.gate.wait()
        return await super().answer(*args, **kwargs)


@asynccontextmanager
async def answering(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    *,
    in_time: float = IN_TIME,
    gate: asyncio.Event | None = None,
) -> AsyncIterator[World]:
    """The lead's live bot answering `/c2a` on an engine where worker-1's approver is BEN and
    worker-2's anyone with the backend role (ANA), after a person asked worker-1 something;
    with a `gate`, each answer waits until it is set."""
    store = SQLiteStore(str(tmp_path / "ledger.sqlite3"))
    await store.open()
    try:
        workspace = local_workspace()
        engine = Engine(workspace, store, VirtualClock(AT))
        engine.approvals.approvers["worker-1"] = (BEN,)
        engine.approvals.approvers["worker-2"] = (f"group:{D_BACKEND_ROLE}",)
        event = normalise(discord_message(ASKED, f"<@{D_W1}> is the deploy done?", mentions=[D_W1]))
        assert event is not None
        for via in workspace.agent_ids:  # each bot receives it
            async with store.transaction():
                await engine.ingest(event, via)
        told: list[Emission] = []

        async def sink(emissions: list[Emission]) -> None:
            told.extend(emissions)

        interactions = Interactions()
        commands = Commands(engine, sink) if gate is None else Gated(engine, gate)
        listen_for_commands(interactions, commands, in_time=in_time)
        async with lead_on_discord(
            monkeypatch, workspace, interactions, FakeDiscordWithCommands
        ) as (fake, sender):
            assert isinstance(fake.interactions, CommandInteractions)
            yield World(fake.interactions, engine, store, told, sender)
    finally:
        await store.close()


def play(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, test: Callable[[World], Awaitable[None]]
) -> None:
    """Run `test` in the world `answering` makes."""

    async def run() -> None:
        async with answering(monkeypatch, tmp_path) as w:
            await test(w)

    asyncio.run(run())


def test_status_and_why_read_the_ledger_in_discord_s_markdown(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async def test(w: World) -> None:
        status = (await w.run(ANA, "status")).splitlines()
        assert status[0].startswith("**lead**: 0 open, ")
        assert status[1].startswith("**worker-1**: 1 open, ")
        assert status[2] == f"  • in {CHANNEL}: <@{D_W1}> is the deploy done?"
        why = await w.run(ANA, "why", link=LINK)
        assert why.splitlines()[0] == f"Message: <@{D_W1}> is the deploy done?"
        assert "  **worker-1**: must_respond (`direct_mention`), " in why
        assert "  **lead**: must_not_respond (" in why
        elsewhere = f"https://discord.com/channels/{GUILD}/{CHANNEL}/830000000000000999"
        assert (await w.run(ANA, "why", link=elsewhere)).startswith("The ledger has no")
        slack = "https://t.slack.com/archives/C0GEN/p1767225600000100"
        assert await w.run(ANA, "why", link=slack) == f"{slack!r} is not a link to a message here."
        assert [(a, o, d["text"]) for a, o, d in w.audited()] == [
            ("", "answered", "status"),
            ("", "answered", f"why {LINK}"),
            ("", "answered", f"why {elsewhere}"),
            ("", "answered", f"why {slack}"),
        ]
        assert w.audited()[0][2] == {"platform": "discord", "user": ANA, "text": "status"}

    play(monkeypatch, tmp_path, test)


def test_a_channel_hidden_from_someone_is_hidden_in_what_they_are_answered(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """#leadership denies @everyone the view and lets the backend role (ANA) in: BEN, who can
    view #general, is told that he is not in it, and `status` and `claims` hide its words."""
    secret, asked = "820000000000000009", "830000000000000002"
    view = str(discord.Permissions(view_channel=True).value)
    overwrites = [
        {"id": GUILD, "type": 0, "allow": "0", "deny": view},
        {"id": D_BACKEND_ROLE, "type": 0, "allow": view, "deny": "0"},
    ]

    async def test(w: World) -> None:
        fake = w.interactions.fake
        await fake.dispatch(
            "CHANNEL_CREATE", fake.add_channel(secret, "leadership", overwrites=overwrites)
        )
        said = f"<@{D_W1}> the merger closes friday"
        event = normalise(discord_message(asked, said, channel=secret, mentions=[D_W1]))
        assert event is not None
        async with w.store.transaction():
            await w.engine.ingest(event, "worker-1")
            await w.engine.claim("worker-1", event.event_id)
        link = f"https://discord.com/channels/{GUILD}/{secret}/{asked}"
        why = await w.run(BEN, "why", link=link)
        assert (
            why == "That message is in a conversation you are not in: only its members can ask why."
        )
        for answer in (await w.run(BEN, "status"), await w.run(BEN, "claims")):
            assert "merger" not in answer and secret not in answer, answer
        assert (await w.run(ANA, "why", link=link)).startswith(f"Message: {said}")
        assert "merger" in await w.run(ANA, "claims")

    play(monkeypatch, tmp_path, test)


def test_an_approver_by_user_id_mutes_and_unmutes_and_anyone_else_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async def test(w: World) -> None:
        refused = await w.run(ANA, "mute", agent="worker-1", duration="30m")
        assert refused == "Only worker-1's approvers can do that."
        assert not w.engine.state.is_muted("worker-1", AT)
        muted = await w.run(BEN, "mute", agent="worker-1", duration="30m")
        assert muted == "worker-1 is muted until 2026-01-01T00:30:00Z: it gets no new turns."
        assert w.engine.state.is_muted("worker-1", AT)
        assert await w.run(BEN, "unmute", agent="worker-1") == (
            "worker-1 is unmuted: it gets turns again."
        )
        assert not w.engine.state.is_muted("worker-1", AT)
        assert [(a, o) for a, o, _ in w.audited()] == [
            ("worker-1", "refused"),
            ("worker-1", "answered"),
            ("worker-1", "answered"),
        ]

    play(monkeypatch, tmp_path, test)


def test_an_approver_by_role_mutes_in_the_guild_but_not_in_a_dm_where_nobody_has_roles(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async def test(w: World) -> None:
        dm = await w.sender._client("lead").create_dm(discord.Object(int(ANA)))
        refused = await w.run(ANA, "mute", channel=str(dm.id), agent="worker-2")
        assert refused == "Only worker-2's approvers can do that."
        assert await w.run(BEN, "mute", agent="worker-2") == (
            "Only worker-2's approvers can do that."
        )
        muted = await w.run(ANA, "mute", agent="worker-2")
        assert muted == "worker-2 is muted until someone unmutes it: it gets no new turns."
        assert w.engine.state.is_muted("worker-2", AT)

    play(monkeypatch, tmp_path, test)


def test_leave_stops_the_agent_s_turn_for_its_approver_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async def test(w: World) -> None:
        assert await w.run(ANA, "leave", agent="worker-1") == (
            "Only worker-1's approvers can do that."
        )
        assert w.told == []
        assert (
            await w.run(BEN, "leave", agent="worker-1") == "Stopped worker-1's turn on 1 message."
        )
        assert [(type(e), e.agent) for e in w.told] == [(Cancel, "worker-1")]
        assert await w.run(BEN, "leave", agent="worker-1") == (
            "worker-1 is working on nothing: nothing to stop."
        )

    play(monkeypatch, tmp_path, test)


def test_claims_help_an_unknown_agent_and_an_unknown_subcommand_are_answered(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async def test(w: World) -> None:
        assert await w.run(BEN, "claims") == "No open claims."
        assert await w.run(BEN, "help") == HELP
        assert (await w.run(BEN, "mute", agent="nobody")).startswith("No agent 'nobody'; ")
        # A subcommand of an older definition still registered somewhere:
        assert await w.run(BEN, "dance") == f"No command 'dance'.\n{HELP}"
        assert [o for _, o, _ in w.audited()] == [
            "answered",
            "answered",
            "unknown",
            "unreadable",
        ]

    play(monkeypatch, tmp_path, test)


def test_an_answer_not_ready_in_time_is_deferred_then_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        async with answering(monkeypatch, tmp_path, in_time=0.05, gate=gate) as w:
            sent = await w.interactions.subcommand(CHANNEL, ANA, APPLICATIONS["lead"], "status")
            async with asyncio.timeout(5):
                while not w.interactions.answers(sent):
                    await asyncio.sleep(0.01)
            (callback,) = w.interactions.answers(sent)
            assert (callback.type, callback.data) == (DEFERRED_MESSAGE, {"flags": EPHEMERAL})
            assert w.interactions.answer_to(sent) is None  # the person sees the bot thinking
            gate.set()
            assert (await w.answer(sent)).startswith("**lead**: 0 open, ")
            (edit,) = [c for c in w.interactions.fake.calls if c.method == "PATCH"]
            assert edit.path.endswith("/messages/@original")
            assert edit.json["allowed_mentions"] == {"parse": []}

    asyncio.run(scenario())


def test_an_answer_in_time_is_the_response_itself_and_pings_nobody(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    async def test(w: World) -> None:
        await w.run(ANA, "status")
        (sent,) = w.interactions._sent.values()
        (callback,) = w.interactions.answers(sent.payload)
        assert (callback.type, callback.data["flags"]) == (MESSAGE, EPHEMERAL)
        assert callback.data["allowed_mentions"] == {"parse": []}

    play(monkeypatch, tmp_path, test)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("short", "short"),
        ("line\n" * 1000, None),
        ("```\n" + "code\n" * 1000, None),
    ],
)
def test_an_answer_is_cut_to_one_message(text: str, shown: str | None) -> None:
    cut = one_message(text)
    if shown is not None:
        assert cut == shown
        return
    assert len(cut) <= MESSAGE_LIMIT and cut.endswith("…")
    assert cut.count("```") % 2 == 0  # a code block cut is closed


def test_each_platform_writes_bold_its_own_way() -> None:
    markup = local_workspace().markup
    assert (markup["discord"].bold, markup["slack"].bold) == ("**", "*")
