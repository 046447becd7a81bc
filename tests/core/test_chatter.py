"""Plain channel chatter is decided once per shape and agent (`core.attention.chatter_shape`);
every decision must be the one the rules make when asked about each event afresh."""

from __future__ import annotations

from typing import Any

import pytest
from builders import (
    HUMAN,
    HUMAN2,
    LEAD,
    W1,
    line,
    local_workspace,
    run,
    slack_body,
    slack_edit,
    slack_join,
    slack_message,
)

import core.deciding
from core.attention import ChatterShape, chatter_shape
from core.attention_context import Context
from core.events import ChatEvent

BASE = 1767225600  # 2026-01-01T00:00:00Z
CHANNELS = ("C0GEN", "C0OPS", "C0MUTE")


def at(second: int) -> str:
    return f"2026-01-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"


def ts(second: int) -> str:
    return f"{BASE + second}.000100"


def said(second: int, event: dict[str, Any], via: str = "lead") -> str:
    return line(at(second), "slack", slack_body(event, via=via), via=via)


def trace() -> list[str]:
    """Chatter of every shape (people, agents, trusted and untrusted bots, statuses, names of
    people and of agents) in channels with different settings, among what is not chatter
    (threads, DMs, roles, broadcasts, edits, fragments after a mention)."""
    lines = [
        said(second, slack_join(user, channel, ts(second)))
        for second, (user, channel) in enumerate(
            ((u, c) for c in CHANNELS for u in (LEAD, W1, "U0W2")), start=1
        )
    ]
    texts = [
        "anyone else seeing slow builds today?",
        "deployed v1.2.3 to staging",
        "status: migration 40% done",
        f"<@{HUMAN2}> can you look at this?",
        f"<@{HUMAN2}> deployed v2 to prod",
        f"<@{LEAD}> can you check the rollback plan?",
        "rerun the flaky integration tests",
        "<!subteam^S0BACK> who can look at the failing migration?",
        "<!here> lunch is at noon",
        "thanks!",
        "",
    ]
    authors: list[dict[str, Any]] = [
        {"user": HUMAN},
        {"user": HUMAN2},
        {"user": LEAD},
        {"user": W1},
        {"user": "U0BOT", "bot_id": "B0TRUST"},
        {"user": "U0BOT2", "bot_id": "B0OTHER"},
    ]
    second = 100
    for channel in CHANNELS:
        for text in texts:
            for author in authors:
                second += 2
                event = slack_message(ts(second), text, channel=channel, **author)
                lines.append(said(second, event))
        second += 2
        lines.append(said(second, slack_message(ts(second), "in a thread", thread_ts=ts(102))))
        second += 2
        dm = slack_message(ts(second), "a DM", channel="D0LEAD", channel_type="im")
        lines.append(said(second, dm))
        second += 2
        lines.append(said(second, slack_edit(ts(104), ts(second), "before", "status: done")))
    return lines


def workspace() -> Any:
    return local_workspace(
        channels={
            "C0GEN": {"broadcast": "ambient"},
            "C0OPS": {"broadcast": "select", "ambient_mode": "digest"},
            "C0MUTE": {
                "ambient_mode": "silent",
                "agents": {"worker-1": {"mute": True}, "worker-2": {"ambient_mode": "digest"}},
            },
        },
        trusted_bots=["U0BOT"],  # a bot author is known by its user id
    )


def test_chatter_decided_by_its_shape_is_decided_as_the_rules_decide_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shapes: list[ChatterShape] = []

    def counting(event: ChatEvent, ctx: Context) -> ChatterShape | None:
        shape = chatter_shape(event, ctx)
        if shape is not None:
            shapes.append(shape)
        return shape

    monkeypatch.setattr(core.deciding, "chatter_shape", counting)
    by_shape, _, _ = run(trace(), workspace())
    monkeypatch.setattr(core.deciding, "chatter_shape", lambda event, ctx: None)
    by_rules, _, _ = run(trace(), workspace())
    assert by_shape == by_rules
    # Most of the trace took the short way, in many shapes.
    assert len(shapes) > len(trace()) // 2
    assert len(set(shapes)) > 20


def test_only_plain_channel_chatter_has_a_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, ChatterShape | None] = {}

    def recording(event: ChatEvent, ctx: Context) -> ChatterShape | None:
        seen[event.text] = shape = chatter_shape(event, ctx)
        return shape

    monkeypatch.setattr(core.deciding, "chatter_shape", recording)
    run(trace(), workspace())
    assert seen["anyone else seeing slow builds today?"] is not None
    assert seen[f"<@{HUMAN2}> can you look at this?"] is not None
    for text in (
        f"<@{LEAD}> can you check the rollback plan?",
        "<!subteam^S0BACK> who can look at the failing migration?",
        "<!here> lunch is at noon",
        "in a thread",
        "a DM",
        "status: done",
    ):
        assert seen[text] is None, text
