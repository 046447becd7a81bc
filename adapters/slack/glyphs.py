"""Slack's reactions: the short name of each signal, the short names that also mean one, and
the stop reaction (`octagonal_sign`), as the `Reactions` this adapter brings to the glyph map.

Slack names an emoji by its short name: `normalise_emoji` drops surrounding colons and skin
tones (`:+1::skin-tone-2:` is `+1`), folds case, and turns Slack's own aliases of one emoji into
one name (`thumbsup` is `+1`, `hand` is `raised_hand`). A manifest's `signals.slack` override is
stored in that form.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from core.signals import Reactions, Signal, shortcode_form

__all__ = ["DEFAULT_SLACK_NAMES", "REACTIONS", "STOP_NAME", "normalise_emoji"]

DEFAULT_SLACK_NAMES: Mapping[Signal, str] = MappingProxyType(
    {
        Signal.SEEN: "eyes",
        Signal.AGREE: "+1",
        Signal.WORKING: "wrench",
        Signal.QUEUED: "clock1",
        Signal.CLAIMED: "raised_hand",
        Signal.DONE: "white_check_mark",
        Signal.DECLINED: "no_good",
        Signal.BLOCKED: "construction",
        Signal.UNCLEAR: "question",
    }
)

STOP_NAME = "octagonal_sign"

# Every clock face reads as *queued*: clock1..clock12 and clock130..clock1230.
_CLOCKS = {f"clock{h}": Signal.QUEUED for h in range(1, 13)} | {
    f"clock{h}30": Signal.QUEUED for h in range(1, 13)
}

# Different emoji that mean a signal (Slack's aliases of one emoji are `normalise_emoji`'s).
_SIGNAL_ALIASES: Mapping[str, Signal] = MappingProxyType(
    {
        "heavy_check_mark": Signal.DONE,
        "ballot_box_with_check": Signal.DONE,
        "hourglass_flowing_sand": Signal.QUEUED,
        "hourglass": Signal.QUEUED,
        **_CLOCKS,
        "hammer_and_wrench": Signal.WORKING,
        "x": Signal.DECLINED,
        "no_entry_sign": Signal.DECLINED,
        "man-gesturing-no": Signal.DECLINED,
        "woman-gesturing-no": Signal.DECLINED,
        "grey_question": Signal.UNCLEAR,
    }
)


def normalise_emoji(name: str) -> str:
    """A Slack reaction's canonical short name (see the module doc)."""
    return shortcode_form(name)


REACTIONS = Reactions(
    defaults=DEFAULT_SLACK_NAMES,
    normalise=normalise_emoji,
    aliases=_SIGNAL_ALIASES,
    stop=frozenset({STOP_NAME}),
    store_normalised=True,
)
