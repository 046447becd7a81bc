"""Outbound rendering on hostile model text: every renderer and splitter of Discord and Slack.

Each call finishes within the bound and only the project's own errors escape; every part fits
its platform's limit and the parts keep every non-blank character of the text, in order, adding
only the marks that close a code block at a cut and reopen it (with its language) after; Slack
text never holds a mention the agent did not choose. The web chat has no outbound renderer: it
stores an agent's text as written, and its page shows it as plain text.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TypeVar

import pytest
from bounds import timed
from builders import discord_post, local_workspace
from hostile_text import hostile, non_blank, texts
from hypothesis import given
from hypothesis import strategies as st

from adapters.discord import render as discord
from adapters.slack import render as slack
from core.errors import C2AError

T = TypeVar("T")

WORKSPACE = local_workspace()
# What a cut may add: the marks that close a code block and reopen it with its language.
FENCE_MARKS = frozenset("`" + string.ascii_letters + string.digits + "_+.#-")
# A Slack control sequence that pings or links someone.
NATIVE_MENTION = re.compile(r"<[@#!]")
# The private-use characters to_mrkdwn holds converted text behind while it works.
PLACEHOLDERS = re.compile("[\ue000-\ue003]")
DISCORD_MENTIONS = st.sampled_from([(), ("user:900000000000000002",), ("agent:lead",)])
SLACK_MENTIONS = st.sampled_from([(), ("user:U111",), ("agent:lead",)])


def attempt(what: str, call: Callable[[], T]) -> T | None:
    """`call`'s value within the bound, or None when it refused with the project's own error."""
    try:
        return timed(what, call)
    except C2AError:
        return None


def assert_kept(text: str, parts: Sequence[str]) -> None:
    """The parts hold every non-blank character of `text`, in order, plus fence marks at most."""
    wanted, kept = non_blank(text), non_blank("".join(parts))
    rest = iter(kept)
    assert all(ch in rest for ch in wanted), "a non-blank character was lost or moved"
    assert set(Counter(kept) - Counter(wanted)) <= FENCE_MARKS


@given(text=texts(), mentions=DISCORD_MENTIONS)
def test_discord_split_text_fits_each_part_and_keeps_the_text(
    text: str, mentions: tuple[str, ...]
) -> None:
    resolved = discord.resolve_mentions(mentions, WORKSPACE)
    prefix = discord.mention_prefix(resolved, text)

    parts = attempt("split_text", lambda: discord.split_text(text, prefix=prefix))

    assert parts is not None
    assert all(0 < discord.units(part) <= discord.MESSAGE_LIMIT for part in parts)
    assert_kept(prefix + text if text.strip() else "", parts)


@given(text=texts(), mentions=DISCORD_MENTIONS)
def test_discord_render_send_pings_only_the_chosen_and_fits_each_part(
    text: str, mentions: tuple[str, ...]
) -> None:
    rendered = attempt(
        "render_send", lambda: discord.render_send(discord_post(text, mentions), WORKSPACE)
    )

    if rendered is None:
        assert not text.strip()  # the one refusal: nothing to send
        return
    assert all(discord.units(part.text) <= discord.MESSAGE_LIMIT for part in rendered.parts)
    assert all(part.allowed_mentions["parse"] == [] for part in rendered.parts)
    assert all(not part.allowed_mentions["users"] for part in rendered.parts[1:])


@given(text=texts())
def test_slack_to_mrkdwn_never_mentions_anyone_nor_shows_a_placeholder(text: str) -> None:
    rendered = attempt("to_mrkdwn", lambda: slack.to_mrkdwn(text))

    assert rendered is not None
    assert not NATIVE_MENTION.search(rendered)
    assert not PLACEHOLDERS.search(rendered)


@given(text=texts(), limit=st.sampled_from([32, 100, 2_000, slack.MAX_CHARS]))
def test_slack_split_fits_each_part_and_keeps_the_text(text: str, limit: int) -> None:
    parts = attempt("split", lambda: slack.split(text, limit))

    assert parts is not None
    assert all(len(part) <= limit for part in parts)
    assert_kept(text, parts)


@given(text=texts(), mentions=SLACK_MENTIONS)
def test_slack_render_message_fits_each_part_and_pings_only_the_chosen(
    text: str, mentions: tuple[str, ...]
) -> None:
    parts = attempt("render_message", lambda: slack.render_message(text, mentions, WORKSPACE))

    assert parts is not None
    assert all(len(part) <= slack.MAX_CHARS for part in parts)
    prefix = slack.mention_prefix(mentions, WORKSPACE)
    chosen = "".join(parts)[len(prefix) :] if prefix else "".join(parts)
    assert not NATIVE_MENTION.search(chosen)


# -- worst cases -------------------------------------------------------------------------------

# Runs that made a renderer or splitter take time quadratic in their length, or never end.
WORST_PIECES = (
    " ", "\n", "\t", "`", "*a ", "**a ", "~~a ", "_a ", "[", "[x](", "# x ", "\u0301", "\u200d",
    "😀", "<@", "&", "&lt;", ":",
)  # fmt: skip
RENDERERS: dict[str, Callable[[str], object]] = {
    "discord.split_text": discord.split_text,
    "discord.render_send": lambda text: discord.render_send(discord_post(text), WORKSPACE),
    "slack.to_mrkdwn": slack.to_mrkdwn,
    "slack.split": slack.split,
    "slack.render_message": lambda text: slack.render_message(text, (), WORKSPACE),
}


@pytest.mark.parametrize("piece", WORST_PIECES)
@pytest.mark.parametrize("renderer", RENDERERS.values(), ids=RENDERERS.keys())
def test_200k_characters_of_one_run_render_within_the_bound(
    renderer: Callable[[str], object], piece: str
) -> None:
    text = hostile(piece, 200_000)
    attempt("rendering 200,000 characters", lambda: renderer(text))
