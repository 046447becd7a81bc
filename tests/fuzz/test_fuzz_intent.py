"""Intent matching on hostile chat text: `IntentRules.classify` and `has`.

Each call finishes within the bound and raises nothing (an `IntentClassifier` never raises),
and `has` agrees with `classify` on every intent, however long or crafted the message, in the
markup of the chat platforms and as plain text.
"""

from __future__ import annotations

from functools import partial

import pytest
from bounds import timed
from hostile_text import hostile, texts
from hypothesis import given

from core.intent import DEFAULT_RULES, READ_LIMIT, Intent
from core.markup import CHAT_MARKUP

RULES = DEFAULT_RULES.with_markup({"chat": CHAT_MARKUP})
PLATFORMS = ("chat", "plain")  # the second brings no markup


@pytest.mark.parametrize("platform", PLATFORMS)
@given(text=texts())
def test_classify_reads_any_text_in_time(platform: str, text: str) -> None:
    found = timed("classify", lambda: RULES.classify(text, platform))

    assert isinstance(found, frozenset) and all(isinstance(i, Intent) for i in found)


@pytest.mark.parametrize("platform", PLATFORMS)
@given(text=texts(max_repeat=READ_LIMIT))
def test_has_agrees_with_classify_on_any_text(platform: str, text: str) -> None:
    found = timed("classify", lambda: RULES.classify(text, platform))

    for intent in Intent:
        has = timed("has", lambda: RULES.has(text, intent, platform))  # noqa: B023 (called at once)
        assert has == (intent in found), intent


# -- worst cases -------------------------------------------------------------------------------

# Runs that made a rule take time quadratic in their length: phrases whose negation and
# question guards rescanned the text, patterns that look ahead to the end of a line, and the
# characters each preparation step searches for.
WORST_PIECES = (
    "not blocked ", "not blocked. ", "i'm not blocked? ", "deployed to a ", "is it approved ",
    "is it approved? ", "ok, so hey, ", "stop it ", "please leave ", "thaaa", "cool ", " ", "\n",
    "<", "<@", "`", "```", ":", ":a", ">", "> x\n", "@", "&lt;", "!", "?", "e\u0301", "😀",
)  # fmt: skip


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("piece", WORST_PIECES)
def test_200k_characters_of_one_run_are_read_within_the_bound(piece: str, platform: str) -> None:
    text = hostile(piece, 200_000)

    timed("classify 200,000 characters", lambda: RULES.classify(text, platform))
    for intent in Intent:
        timed("has on 200,000 characters", partial(RULES.has, text, intent, platform))
