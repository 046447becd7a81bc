"""Questions with buttons on Discord: what the real discord.py sender puts on the wire for an
`Ask` and its redraw, and how presses and commands that reach a live bot as interactions from
the fake Discord are routed and answered."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import discord
import pytest
from builders import (
    D_BACKEND_ROLE,
    D_HUMAN,
    D_HUMAN2,
    D_LEAD,
    local_workspace,
)
from discord_asking import APPLICATIONS, CHANNEL, lead_on_discord
from fakes.discord import FakeDiscord
from test_discord_send import world

from adapters.discord.asks import listen_for_presses
from adapters.discord.interactions import Interactions
from core.actions import Ask, Choice
from core.approvals import Approvals, choice_id
from core.clock import VirtualClock

CHOICES = (Choice("yes", "Allow once", True), Choice("no", "Refuse", False))


def question(asked: str, **changes: Any) -> Ask:
    fields: dict[str, Any] = {
        "agent": "lead",
        "platform": "discord",
        "conversation": CHANNEL,
        "key": f"discord:{asked}:lead:ask:r1",
        "request": "r1",
        "text": "lead asks to use shell_exec.",
        "choices": CHOICES,
        "in_reply_to": f"discord:{asked}",
    }
    return Ask(**(fields | changes))


def test_an_ask_is_a_reply_with_a_button_per_choice_then_redrawn_without_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("<@900000000000000001> clean the build dir")
            result = await w.sender.send(question(asked))
            (call,) = w.posts()
            (row,) = call.json["components"]
            assert row["type"] == 1
            assert [
                (b["type"], b["style"], b["label"], b["custom_id"]) for b in row["components"]
            ] == [
                (2, 1, "Allow once", choice_id("r1", "yes")),
                (2, 4, "Refuse", choice_id("r1", "no")),
            ]
            assert call.json["content"] == "lead asks to use shell_exec."
            assert call.json["allowed_mentions"] == {"parse": [], "replied_user": False}
            assert call.json["message_reference"]["message_id"] == int(asked)
            assert call.json["nonce"] and call.json["enforce_nonce"]
            (posted,) = w.by(D_LEAD)
            assert result["messageId"] == posted["id"]

            outcome = "Allow once, by 810000000000000001 at 2024-05-14T09:02:00Z."
            redraw = question(asked, choices=(), message_id=posted["id"], outcome=outcome)
            assert await w.sender.send(redraw) == {"messageId": posted["id"]}
            (edit,) = [c for c in w.fake.calls if c.method == "PATCH"]
            assert edit.json["components"] == []
            assert posted["content"] == f"lead asks to use shell_exec.\n{outcome}"
            assert posted["components"] == []

    asyncio.run(scenario())


def test_a_long_question_is_cut_to_fit_one_message(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        async with world(monkeypatch) as w:
            asked = await w.asks("go on")
            await w.sender.send(question(asked, text="x" * 5000))
            (call,) = w.posts()
            assert len(call.json["content"]) == 1800 and call.json["content"].endswith("…")

    asyncio.run(scenario())


# -- presses and commands at a live bot ----------------------------------------------------------


async def answered(fake: FakeDiscord, interaction: dict[str, Any]) -> Any:
    while not fake.interactions.answers(interaction):
        await asyncio.sleep(0.01)
    (answer,) = fake.interactions.answers(interaction)
    return answer


def open_approvals(approvers: tuple[str, ...]) -> Approvals:
    clock = VirtualClock(datetime(2024, 5, 14, 9, 1, tzinfo=UTC))
    approvals = Approvals(clock, {"lead": approvers})
    approvals.open("r1", "lead", CHOICES, timedelta(minutes=5))
    return approvals


def test_a_press_in_a_dm_decides_for_an_approver_named_by_user_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        interactions = Interactions()
        approvals = open_approvals((D_HUMAN2,))
        listen_for_presses(interactions, approvals)
        async with lead_on_discord(monkeypatch, local_workspace(), interactions) as (fake, sender):
            dm = await sender._client("lead").create_dm(discord.Object(int(D_HUMAN2)))
            asked = await fake.user_says(str(dm.id), D_HUMAN2, "may you?")
            posted = await sender.send(question(asked["id"], conversation=str(dm.id)))
            press = await fake.interactions.press(
                posted["messageId"], choice_id("r1", "yes"), D_HUMAN2
            )
            assert "member" not in press and press["user"]["id"] == D_HUMAN2
            assert (await answered(fake, press)).type == 6
            verdict = await approvals.wait("r1")
            assert verdict.allowed and verdict.by == D_HUMAN2

    asyncio.run(scenario())


def test_a_press_on_a_closed_question_is_told_so_and_decides_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        interactions = Interactions()
        approvals = open_approvals((f"group:{D_BACKEND_ROLE}",))
        listen_for_presses(interactions, approvals)
        async with lead_on_discord(monkeypatch, local_workspace(), interactions) as (fake, sender):
            asked = await fake.user_says(CHANNEL, D_HUMAN, "go?")
            posted = await sender.send(question(asked["id"]))
            first = await fake.interactions.press(
                posted["messageId"], choice_id("r1", "no"), D_HUMAN
            )
            assert (await answered(fake, first)).type == 6
            again = await fake.interactions.press(
                posted["messageId"], choice_id("r1", "yes"), D_HUMAN
            )
            answer = await answered(fake, again)
            assert (answer.type, answer.ephemeral) == (4, True)
            assert answer.data["content"] == "This question is no longer open."
            verdict = await approvals.wait("r1")
            assert verdict.choice is not None and verdict.choice.id == "no"

    asyncio.run(scenario())


def test_interactions_go_to_the_handler_of_their_command_or_longest_prefix(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        seen: list[tuple[str, str]] = []
        interactions = Interactions()

        def handler(name: str) -> Any:
            async def handle(interaction: discord.Interaction) -> None:
                seen.append((name, str(interaction.data)))
                await interaction.response.send_message(name, ephemeral=True)

            return handle

        interactions.on_component("c2a:", handler("asks"))
        interactions.on_component("c2a:other:", handler("other"))
        interactions.on_command("c2a", handler("command"))
        async with lead_on_discord(monkeypatch, local_workspace(), interactions) as (fake, sender):
            command = await fake.interactions.command(
                CHANNEL, D_HUMAN, APPLICATIONS["lead"], "c2a", what="status"
            )
            answer = await answered(fake, command)
            assert (answer.data["content"], answer.ephemeral) == ("command", True)
            assert seen[0][0] == "command" and "'status'" in seen[0][1]
            asked = await fake.user_says(CHANNEL, D_HUMAN, "go?")
            posted = await sender.send(question(asked["id"], request="other"))
            press = await fake.interactions.press(
                posted["messageId"], choice_id("other", "yes"), D_HUMAN
            )
            assert (await answered(fake, press)).data["content"] == "other"
            unknown = await fake.interactions.command(
                CHANNEL, D_HUMAN, APPLICATIONS["lead"], "nothing"
            )
            while "has no handler" not in caplog.text:
                await asyncio.sleep(0.01)
            assert fake.interactions.answers(unknown) == []

    caplog.set_level("INFO", logger="adapters.discord.interactions")
    asyncio.run(scenario())
