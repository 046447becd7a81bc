"""The `/c2a` text parsed into typed commands: every command, its arguments, durations, and
the texts that are no command."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.commands import (
    AgentCommand,
    Claims,
    Help,
    Leave,
    Mute,
    Status,
    Unmute,
    Unreadable,
    Why,
    parse,
    parse_duration,
)


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("status", Status()),
        ("  STATUS ", Status()),
        ("", Help()),
        ("help", Help()),
        ("claims", Claims()),
        (
            "why https://t.slack.com/archives/C1/p1767225600000100",
            Why("https://t.slack.com/archives/C1/p1767225600000100"),
        ),
        ("why <https://discord.com/channels/1/2/3>", Why("https://discord.com/channels/1/2/3")),
        ("mute worker-1", Mute("worker-1")),
        ("mute worker-1 1h30m", Mute("worker-1", timedelta(hours=1, minutes=30))),
        ("unmute worker-1", Unmute("worker-1")),
        ("leave lead", Leave("lead")),
        ("mute @lead 10m", Mute("@lead", timedelta(minutes=10))),  # as people name it
    ],
)
def test_each_command_is_read_with_its_arguments(text: str, command: object) -> None:
    assert parse(text) == command


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("dance", "no command 'dance'"),
        ("status now", "`status` takes nothing after it"),
        ("why", "`why` takes one message link"),
        ("mute", "`mute` takes an agent"),
        ("mute lead soon", "'soon' is not a duration"),
        ("leave", "`leave` takes one agent"),
        ("unmute a b", "`unmute` takes one agent"),
    ],
)
def test_a_text_that_is_no_command_says_why(text: str, problem: str) -> None:
    parsed = parse(text)
    assert isinstance(parsed, Unreadable) and parsed.problem.startswith(problem)


@pytest.mark.parametrize(
    ("text", "duration"),
    [
        ("90s", timedelta(seconds=90)),
        ("30m", timedelta(minutes=30)),
        ("2H", timedelta(hours=2)),
        ("1d12h", timedelta(days=1, hours=12)),
        ("0m", None),
        ("1.5h", None),
        ("h", None),
        ("-1h", None),
        ("1w", None),
    ],
)
def test_a_duration_is_numbers_with_units(text: str, duration: timedelta | None) -> None:
    assert parse_duration(text) == duration


@pytest.mark.parametrize(
    ("text", "agent"),
    [("mute a1 30m", "a1"), ("unmute a2", "a2"), ("leave a3", "a3"), ("status", None)],
)
def test_only_the_commands_about_one_agent_name_an_agent(text: str, agent: str | None) -> None:
    command = parse(text)
    named = command.agent if isinstance(command, AgentCommand) else None
    assert named == agent
