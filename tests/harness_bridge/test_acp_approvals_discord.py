"""An ACP agent's permission request asked of people on Discord, end to end: the fake ACP agent
(a real subprocess) asks leave to run `shell_exec`, which its allow list does not grant; the
question reaches the channel of the turn as a message with a button per choice, through the
outbox and the real discord.py sender, and a press comes back to the lead's live discord.py
client as a component interaction from the fake Discord.

An approver's press (by user id, or as a holder of an approving role) lets the tool run: the
interaction is acknowledged with a deferred update and the message is edited to say who
decided, with no buttons left. A non-approver's press gets an ephemeral refusal and decides
nothing; silence until the deadline (the host's virtual clock) is a refusal."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import D_BACKEND_ROLE, D_LEAD
from discord_asking import ANA, BEN, CHANNEL, lead_on_discord
from fakes.discord import FakeDiscord
from fakes.discord_interactions import EPHEMERAL
from outbox_pump import pumped
from test_acp_approvals import decided
from test_acp_backend import Bed, loop_for, scenario, turn_of

from adapters.discord.asks import listen_for_presses
from adapters.discord.interactions import Interactions
from adapters.discord.normalise import normalise
from core.outbox import Outbox


@contextlib.asynccontextmanager
async def discord_for(bed: Bed, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeDiscord]:
    """The fake Discord, the lead's live bot answering presses, and the outbox sending to it
    every few milliseconds."""
    interactions = Interactions()
    listen_for_presses(interactions, bed.engine.approvals)
    bots = lead_on_discord(monkeypatch, bed.engine.workspace, interactions)
    async with bots as (fake, sender):
        outbox = Outbox(bed.store, bed.engine.clock, {"discord": sender})
        async with pumped(outbox):
            yield fake


async def mention_of_lead(bed: Bed, fake: FakeDiscord) -> str:
    """A person asks the lead in #general; the event is in the ledger. Returns its id."""
    message = await fake.user_says(CHANNEL, BEN, f"<@{D_LEAD}> can you clean the build dir?")
    event = normalise({"op": 0, "s": 1, "t": "MESSAGE_CREATE", "d": fake.as_event(message)})
    assert event is not None
    async with bed.store.transaction():
        await bed.engine.ingest(event, via="lead")  # as the lead's bot received it
    return event.event_id


async def asked(fake: FakeDiscord) -> dict[str, Any]:
    """The lead's message with buttons, once posted."""
    while True:
        for message in list(fake.messages.values()):
            if message["author"]["id"] == D_LEAD and message.get("components"):
                return message
        await asyncio.sleep(0.02)


def buttons(message: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A posted message's buttons: label → the button."""
    (row,) = message["components"]
    return {button["label"]: button for button in row["components"]}


def discord_scenario(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    presses: list[str],
    *,
    wait: bool = False,
    by_role: bool = False,
) -> None:
    """Run a turn whose agent asks for `shell_exec`; `presses` press "Allow once" in turn
    (ANA is the lead's approver, by user id or, with `by_role`, as a holder of the backend
    role); with `wait`, the clock passes the deadline instead."""

    async def test(bed: Bed) -> None:
        approver = f"group:{D_BACKEND_ROLE}" if by_role else ANA
        bed.engine.approvals.approvers["lead"] = (approver,)
        async with (
            discord_for(bed, monkeypatch) as fake,
            loop_for(bed, FAKE_ACP_ASK="shell_exec") as loop,
        ):
            event_id = await mention_of_lead(bed, fake)
            turn = asyncio.create_task(loop.run(await turn_of(bed.engine, event_id)))
            message = await asked(fake)
            assert message["content"] == "lead asks to use shell_exec."
            assert message["message_reference"]["message_id"] == event_id.split(":")[1]
            choices = buttons(message)
            assert {c: b["style"] for c, b in choices.items()} == {"Allow once": 1, "Reject": 4}
            sent = []
            for user in presses:
                custom_id = choices["Allow once"]["custom_id"]
                sent.append(await fake.interactions.press(message["id"], custom_id, user))
            if wait:
                bed.engine.clock.advance(timedelta(seconds=301))  # type: ignore[attr-defined]
            assert (await turn).status == "completed"
            while message["components"]:
                await asyncio.sleep(0.02)  # until the outbox has redrawn it
            question, outcome = message["content"].split("\n")
            assert question == "lead asks to use shell_exec."
            decided(bed, outcome, ANA if presses and presses[-1] == ANA else None)
            for user, interaction in zip(presses, sent, strict=True):
                (answer,) = fake.interactions.answers(interaction)
                if user == ANA:
                    assert (answer.type, answer.data) == (6, {})
                else:
                    assert answer.type == 4 and answer.data["flags"] == EPHEMERAL
                    assert answer.data["content"] == "Only lead's approvers can answer this."

    scenario(tmp_path, test)


def test_on_discord_an_approver_s_press_lets_the_tool_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    discord_scenario(tmp_path, monkeypatch, [ANA])


def test_on_discord_a_non_approver_s_press_is_refused_ephemerally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    discord_scenario(tmp_path, monkeypatch, [BEN, ANA])


def test_on_discord_silence_times_out_to_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    discord_scenario(tmp_path, monkeypatch, [BEN], wait=True)


def test_on_discord_a_holder_of_an_approving_role_may_decide(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    discord_scenario(tmp_path, monkeypatch, [BEN, ANA], by_role=True)


def test_an_agent_s_own_option_ids_never_reach_a_button(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ACP option id is any string: one of 120 characters with colons in it would not fit a
    Discord button's custom id (100 at most) and would not parse back. The buttons carry the
    options' positions; the agent is answered with its own id."""
    prefix = "c2a:0123456789abcdef:" * 6

    async def test(bed: Bed) -> None:
        bed.engine.approvals.approvers["lead"] = (ANA,)
        async with (
            discord_for(bed, monkeypatch) as fake,
            loop_for(bed, FAKE_ACP_ASK="shell_exec", FAKE_ACP_OPTION_PREFIX=prefix) as loop,
        ):
            event_id = await mention_of_lead(bed, fake)
            turn = asyncio.create_task(loop.run(await turn_of(bed.engine, event_id)))
            message = await asked(fake)
            choices = buttons(message)
            assert all(len(b["custom_id"]) <= 100 for b in choices.values())
            assert not any(prefix in b["custom_id"] for b in choices.values())
            await fake.interactions.press(message["id"], choices["Allow once"]["custom_id"], ANA)
            assert (await turn).status == "completed"
        chosen = [r["outcome"] for r in bed.records("permission")]
        assert chosen == [{"outcome": "selected", "optionId": f"{prefix}yes"}]

    scenario(tmp_path, test)
