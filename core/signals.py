"""The nine C2A reaction signals: the disposition each carries, which supersede which, and glyphs.

Agents reason about signals, never glyphs (spec 001). This module owns the translation both ways:
`GlyphMap.native` turns a signal into the platform's reaction (a Slack short name, a unicode
emoji on Discord and webchat) and `GlyphMap.signal_for` reads a reaction a person or agent
placed back into a signal.

Reading a reaction is deliberately forgiving and small: the emoji is normalised first
(`normalise_emoji`: skin tones, variation selectors, colons and true Slack name aliases), then
looked up in the map's own glyphs, then in the default glyphs, then in a short table of signal
aliases (`heavy_check_mark` is *done*, `hourglass` is *queued*, ...). The map's own glyphs always
win, so a workspace that remaps a signal onto an alias glyph reads it back as its own choice.

🛑 (Slack `octagonal_sign`) is not a signal: it asks the agent to stop, see `is_stop_reaction`.
✋ is *claimed*, never stop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from core.decision import Disposition

__all__ = [
    "DEFAULT_GLYPHS",
    "DEFAULT_SLACK_NAMES",
    "PLATFORMS",
    "SIGNAL_DISPOSITION",
    "STATUS_SIGNALS",
    "GlyphMap",
    "Signal",
    "glyph_map",
    "is_stop_reaction",
    "normalise_emoji",
    "superseded_by",
]


class Signal(StrEnum):
    """A typed reaction: a zero-turn disposition of an event (spec 001)."""

    SEEN = "seen"
    AGREE = "agree"
    WORKING = "working"
    QUEUED = "queued"
    CLAIMED = "claimed"
    DONE = "done"
    DECLINED = "declined"
    BLOCKED = "blocked"
    UNCLEAR = "unclear"


SIGNAL_DISPOSITION: Mapping[Signal, Disposition | None] = MappingProxyType(
    {
        Signal.SEEN: Disposition.ACKNOWLEDGED,
        Signal.AGREE: Disposition.ACKNOWLEDGED,
        Signal.WORKING: Disposition.CLAIMED,
        Signal.QUEUED: Disposition.DEFERRED,
        Signal.CLAIMED: Disposition.CLAIMED,
        Signal.DONE: Disposition.RESPONDED,
        Signal.DECLINED: Disposition.IGNORED,
        Signal.BLOCKED: Disposition.DEFERRED,
        # Asking for clarification does not end the event: it stays open.
        Signal.UNCLEAR: None,
    }
)

STATUS_SIGNALS: frozenset[Signal] = frozenset(
    {Signal.SEEN, Signal.WORKING, Signal.QUEUED, Signal.CLAIMED, Signal.BLOCKED}
)

# What posting the key signal removes. The rule in words: a newer status replaces the older
# status, except that *seen* never retracts a commitment; *done* and *declined* end every status;
# *agree* and *unclear* say more than *seen*, and replace only it.
_SUPERSEDES: Mapping[Signal, frozenset[Signal]] = MappingProxyType(
    {
        Signal.SEEN: frozenset(),
        Signal.AGREE: frozenset({Signal.SEEN}),
        Signal.WORKING: STATUS_SIGNALS - {Signal.WORKING},
        Signal.QUEUED: STATUS_SIGNALS - {Signal.QUEUED},
        Signal.CLAIMED: STATUS_SIGNALS - {Signal.CLAIMED},
        Signal.BLOCKED: STATUS_SIGNALS - {Signal.BLOCKED},
        Signal.DONE: STATUS_SIGNALS,
        Signal.DECLINED: STATUS_SIGNALS,
        Signal.UNCLEAR: frozenset({Signal.SEEN}),
    }
)


def superseded_by(new: Signal) -> frozenset[Signal]:
    """The earlier status reactions to remove from a message when `new` is posted on it.

    Never contains `new` itself; always a subset of `STATUS_SIGNALS`.
    """
    return _SUPERSEDES[new]


DEFAULT_GLYPHS: Mapping[Signal, str] = MappingProxyType(
    {
        Signal.SEEN: "👀",
        Signal.AGREE: "👍",
        Signal.WORKING: "🔧",
        Signal.QUEUED: "🕐",
        Signal.CLAIMED: "✋",
        Signal.DONE: "✅",
        Signal.DECLINED: "🙅",
        Signal.BLOCKED: "🚧",
        Signal.UNCLEAR: "❓",
    }
)

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

PLATFORMS: tuple[str, ...] = ("slack", "discord", "webchat")

# Slack names that are the same emoji under another name (Slack's own aliases), mapped to the
# name this module uses. Different emoji that merely mean the same signal are signal aliases.
_SLACK_NAME_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "thumbsup": "+1",
        "thumbsdown": "-1",
        "hand": "raised_hand",
    }
)

# Every clock face reads as *queued*: clock1..clock12 are U+1F550..U+1F55B, clock130..clock1230
# are U+1F55C..U+1F567.
_SLACK_CLOCKS = {f"clock{h}": Signal.QUEUED for h in range(1, 13)} | {
    f"clock{h}30": Signal.QUEUED for h in range(1, 13)
}
_UNICODE_CLOCKS = {chr(0x1F550 + i): Signal.QUEUED for i in range(24)}

_SLACK_SIGNAL_ALIASES: Mapping[str, Signal] = MappingProxyType(
    {
        "heavy_check_mark": Signal.DONE,
        "ballot_box_with_check": Signal.DONE,
        "hourglass_flowing_sand": Signal.QUEUED,
        "hourglass": Signal.QUEUED,
        **_SLACK_CLOCKS,
        "hammer_and_wrench": Signal.WORKING,
        "x": Signal.DECLINED,
        "no_entry_sign": Signal.DECLINED,
        "man-gesturing-no": Signal.DECLINED,
        "woman-gesturing-no": Signal.DECLINED,
        "grey_question": Signal.UNCLEAR,
    }
)

# Keys are already normalised: no U+FE0F, no skin tone.
_UNICODE_SIGNAL_ALIASES: Mapping[str, Signal] = MappingProxyType(
    {
        "✔": Signal.DONE,
        "☑": Signal.DONE,
        "⏳": Signal.QUEUED,
        "⌛": Signal.QUEUED,
        **_UNICODE_CLOCKS,
        "🛠": Signal.WORKING,
        "❌": Signal.DECLINED,
        "🚫": Signal.DECLINED,
        "🙅\u200d♂": Signal.DECLINED,
        "🙅\u200d♀": Signal.DECLINED,
        "❔": Signal.UNCLEAR,
    }
)

_SIGNAL_ALIASES: Mapping[str, Mapping[str, Signal]] = MappingProxyType(
    {
        "slack": _SLACK_SIGNAL_ALIASES,
        "discord": _UNICODE_SIGNAL_ALIASES,
        "webchat": _UNICODE_SIGNAL_ALIASES,
    }
)

_STOP_GLYPHS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "slack": frozenset({"octagonal_sign"}),
        "discord": frozenset({"🛑"}),
        "webchat": frozenset({"🛑"}),
    }
)

_DEFAULTS: Mapping[str, Mapping[Signal, str]] = MappingProxyType(
    {"slack": DEFAULT_SLACK_NAMES, "discord": DEFAULT_GLYPHS, "webchat": DEFAULT_GLYPHS}
)

_SKIN_TONES = range(0x1F3FB, 0x1F400)
_VARIATION_SELECTORS = {0xFE0E, 0xFE0F}


def _check_platform(platform: str) -> None:
    if platform not in PLATFORMS:
        known = ", ".join(PLATFORMS)
        raise ValueError(f"unknown platform {platform!r}; known platforms: {known}")


def normalise_emoji(platform: str, name: str) -> str:
    """The canonical form of a reaction as `platform` names it; raises ValueError on a platform.

    Slack: surrounding colons and skin tones go (`:+1::skin-tone-2:` is `+1`), case folds, and
    Slack's own aliases of one emoji become one name (`thumbsup` is `+1`, `hand` is
    `raised_hand`). Distinct emoji stay distinct: `heavy_check_mark` is not renamed to
    `white_check_mark`, it is a signal alias for *done* in `GlyphMap.signal_for`.

    Discord and webchat: variation selectors (U+FE0E, U+FE0F) and skin-tone modifiers
    (U+1F3FB..U+1F3FF) go; a custom emoji `<:name:id>` or `<a:name:id>` becomes `name:id`.
    """
    _check_platform(platform)
    text = name.strip()
    if platform == "slack":
        short = text.strip(":").split("::", 1)[0].casefold()
        return _SLACK_NAME_ALIASES.get(short, short)
    if text.startswith("<") and text.endswith(">") and text.count(":") == 2:
        _, custom, emoji_id = text[1:-1].split(":")
        return f"{custom}:{emoji_id}"
    return "".join(
        ch for ch in text if ord(ch) not in _VARIATION_SELECTORS and ord(ch) not in _SKIN_TONES
    )


def is_stop_reaction(platform: str, emoji: str) -> bool:
    """Whether the reaction asks the agent to stop: 🛑, Slack `octagonal_sign`. ✋ is not stop."""
    return normalise_emoji(platform, emoji) in _STOP_GLYPHS[platform]


def _default_slack() -> Mapping[Signal, str]:
    return DEFAULT_SLACK_NAMES


def _default_unicode() -> Mapping[Signal, str]:
    return DEFAULT_GLYPHS


@dataclass(frozen=True, slots=True)
class GlyphMap:
    """The native reaction for each signal on each platform; validated on construction.

    Every signal must have a glyph on every platform, no two signals may share a glyph on one
    platform (after `normalise_emoji`), and no signal may use the stop glyph; otherwise
    ValueError.
    """

    slack: Mapping[Signal, str] = field(default_factory=_default_slack)
    discord: Mapping[Signal, str] = field(default_factory=_default_unicode)
    webchat: Mapping[Signal, str] = field(default_factory=_default_unicode)

    def __post_init__(self) -> None:
        for platform in PLATFORMS:
            forms = self._forms(platform)
            missing = [signal.value for signal in Signal if not forms.get(signal)]
            if missing:
                raise ValueError(f"{platform} glyph map has no glyph for: {', '.join(missing)}")
            owner: dict[str, Signal] = {}
            for signal in Signal:
                key = normalise_emoji(platform, forms[signal])
                if not key:
                    raise ValueError(f"{platform} glyph for {signal.value} is empty")
                if key in _STOP_GLYPHS[platform]:
                    raise ValueError(
                        f"{platform} glyph {forms[signal]!r} for {signal.value} is the stop"
                        " reaction; pick another glyph"
                    )
                if key in owner:
                    raise ValueError(
                        f"{platform} glyph {forms[signal]!r} is used by both"
                        f" {owner[key].value} and {signal.value}"
                    )
                owner[key] = signal

    def _forms(self, platform: str) -> Mapping[Signal, str]:
        _check_platform(platform)
        return {"slack": self.slack, "discord": self.discord, "webchat": self.webchat}[platform]

    def native(self, platform: str, signal: Signal) -> str:
        """The reaction to post for `signal` on `platform`; ValueError on an unknown platform."""
        return self._forms(platform)[signal]

    def signal_for(self, platform: str, emoji: str) -> Signal | None:
        """The signal a reaction means, or None; ValueError on an unknown platform.

        Looks up the normalised emoji in this map's glyphs, then the default glyphs, then the
        signal aliases; the first hit wins.
        """
        key = normalise_emoji(platform, emoji)
        for forms in (self._forms(platform), _DEFAULTS[platform]):
            for signal, glyph in forms.items():
                if normalise_emoji(platform, glyph) == key:
                    return signal
        return _SIGNAL_ALIASES[platform].get(key)


def glyph_map(overrides: Mapping[str, Mapping[str, str]] | None = None) -> GlyphMap:
    """A `GlyphMap` of the defaults with `overrides` applied; raises ValueError on a bad override.

    `overrides` is shaped like the manifest key `signals`:
    `{"slack": {"done": "heavy_check_mark"}, "discord": {"done": "☑️"}}`. An override for
    discord also applies to webchat unless webchat has its own. Slack names are stored without
    colons or skin tone. Unknown platforms, unknown signal names, empty glyphs, shared glyphs
    and the stop glyph are refused with a message naming the offending key.
    """
    overrides = overrides or {}
    for platform in overrides:
        _check_platform(platform)
    forms: dict[str, dict[Signal, str]] = {}
    for platform in PLATFORMS:
        base = forms["discord"] if platform == "webchat" else _DEFAULTS[platform]
        merged = dict(base)
        for name, glyph in overrides.get(platform, {}).items():
            try:
                signal = Signal(name)
            except ValueError:
                known = ", ".join(s.value for s in Signal)
                raise ValueError(
                    f"unknown signal {name!r} under signals.{platform}; known signals: {known}"
                ) from None
            if not isinstance(glyph, str) or not glyph.strip():
                raise ValueError(f"signals.{platform}.{name} must be a non-empty string")
            merged[signal] = normalise_emoji(platform, glyph) if platform == "slack" else glyph
        forms[platform] = merged
    return GlyphMap(
        slack=MappingProxyType(forms["slack"]),
        discord=MappingProxyType(forms["discord"]),
        webchat=MappingProxyType(forms["webchat"]),
    )
