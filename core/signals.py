"""The nine C2A reaction signals: the disposition each carries, which supersede which, and glyphs.

Agents reason about signals, never glyphs (spec 001). This module owns the translation both ways:
`GlyphMap.native` turns a signal into a platform's reaction and `GlyphMap.signal_for` reads a
reaction a person or agent placed back into a signal. It names no platform: each adapter brings
its `Reactions` (its default glyphs, how it writes an emoji, its aliases and its stop glyphs), and
the composition root hands them to `glyph_map` keyed by platform name.

Two ways of writing an emoji are common enough to live here: unicode (`unicode_form`: variation
selectors and skin tones go, a custom emoji `<:name:id>` becomes `name:id`) and short names
(`shortcode_form`: `:+1::skin-tone-2:` is `+1`, and a short name's true aliases become one
name, `thumbsup` is `+1`). Unicode platforms share `unicode_reactions`.

Reading a reaction is deliberately forgiving and small: the emoji is normalised first, then
looked up in the map's own glyphs, then in the platform's default glyphs, then in its short table
of signal aliases (✔ is *done*, ⏳ is *queued*, ...). The map's own glyphs always win, so a
workspace that remaps a signal onto an alias glyph reads it back as its own choice.

🛑 is not a signal: it asks the agent to stop, see `GlyphMap.is_stop`. ✋ is *claimed*, never stop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from core.decision import Disposition

__all__ = [
    "DEFAULT_GLYPHS",
    "SIGNAL_DISPOSITION",
    "STATUS_SIGNALS",
    "STOP_GLYPH",
    "UNICODE_SIGNAL_ALIASES",
    "GlyphMap",
    "Reactions",
    "Signal",
    "glyph_map",
    "shortcode_form",
    "superseded_by",
    "taken_off",
    "unicode_form",
    "unicode_reactions",
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
# status, except that *seen* never retracts a commitment (it replaces only *blocked*: the agent
# can read the message again); *done* and *declined* end every status; *agree* and *unclear*
# say more than *seen*, and replace only it.
_SUPERSEDES: Mapping[Signal, frozenset[Signal]] = MappingProxyType(
    {
        Signal.SEEN: frozenset({Signal.BLOCKED}),
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


def taken_off(new: Signal, placed: frozenset[Signal] | None) -> frozenset[Signal] | None:
    """The statuses to take off a message when `new` is posted, of those the agent `placed`
    there; None when what is placed is not known (the sender must look)."""
    return None if placed is None else superseded_by(new) & placed


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

STOP_GLYPH = "🛑"

# Every clock face reads as *queued*: U+1F550..U+1F567.
_UNICODE_CLOCKS = {chr(0x1F550 + i): Signal.QUEUED for i in range(24)}

# Keys are already normalised: no U+FE0F, no skin tone.
UNICODE_SIGNAL_ALIASES: Mapping[str, Signal] = MappingProxyType(
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

# Short names that are the same emoji under another name, mapped to the name used here.
# Different emoji that merely mean the same signal are signal aliases, not these.
_SHORTCODE_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "thumbsup": "+1",
        "thumbsdown": "-1",
        "hand": "raised_hand",
    }
)

_SKIN_TONES = range(0x1F3FB, 0x1F400)
_VARIATION_SELECTORS = {0xFE0E, 0xFE0F}


def unicode_form(text: str) -> str:
    """A unicode emoji's canonical form: variation selectors (U+FE0E, U+FE0F) and skin-tone
    modifiers (U+1F3FB..U+1F3FF) go; a custom emoji `<:name:id>` or `<a:name:id>` is `name:id`."""
    text = text.strip()
    if text.startswith("<") and text.endswith(">") and text.count(":") == 2:
        _, custom, emoji_id = text[1:-1].split(":")
        return f"{custom}:{emoji_id}"
    return "".join(
        ch for ch in text if ord(ch) not in _VARIATION_SELECTORS and ord(ch) not in _SKIN_TONES
    )


def shortcode_form(text: str) -> str:
    """A short name's canonical form: surrounding colons and skin tones go
    (`:+1::skin-tone-2:` is `+1`), case folds, and true aliases of one emoji become one name
    (`thumbsup` is `+1`, `hand` is `raised_hand`). Distinct emoji stay distinct:
    `heavy_check_mark` is not renamed to `white_check_mark`."""
    short = text.strip().strip(":").split("::", 1)[0].casefold()
    return _SHORTCODE_ALIASES.get(short, short)


@dataclass(frozen=True, slots=True)
class Reactions:
    """How one platform writes reactions, brought by its adapter.

    `defaults`: the glyph of each signal; `normalise`: an emoji's canonical form (`unicode_form`
    or `shortcode_form`, or the platform's own); `aliases`: other emoji (normalised) that mean a
    signal; `stop`: the normalised glyphs that ask an agent to stop; `overrides_from`: another
    platform whose manifest `signals:` overrides apply here too unless this one has its own;
    `store_normalised`: an override glyph is kept in its normalised form.
    """

    defaults: Mapping[Signal, str]
    normalise: Callable[[str], str]
    aliases: Mapping[str, Signal] = field(default_factory=dict)
    stop: frozenset[str] = frozenset()
    overrides_from: str | None = None
    store_normalised: bool = False


def unicode_reactions(overrides_from: str | None = None) -> Reactions:
    """The reactions of a platform that writes emoji as unicode: the spec's glyphs, 🛑 to stop."""
    return Reactions(
        defaults=DEFAULT_GLYPHS,
        normalise=unicode_form,
        aliases=UNICODE_SIGNAL_ALIASES,
        stop=frozenset({STOP_GLYPH}),
        overrides_from=overrides_from,
    )


@dataclass(frozen=True, slots=True)
class GlyphMap:
    """The native reaction for each signal on each platform; validated on construction.

    `reactions` are the platforms' own (keyed by platform name); `forms` the glyphs in use, the
    platform's defaults where absent. Every signal must have a glyph on every platform, no two
    signals may share a glyph on one platform (after normalising), and no signal may use a stop
    glyph; otherwise ValueError.
    """

    reactions: Mapping[str, Reactions]
    forms: Mapping[str, Mapping[Signal, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for platform in self.reactions:
            self._check(platform)

    def _check(self, platform: str) -> None:
        forms = self._forms(platform)
        missing = [signal.value for signal in Signal if not forms.get(signal)]
        if missing:
            raise ValueError(f"{platform} glyph map has no glyph for: {', '.join(missing)}")
        owner: dict[str, Signal] = {}
        for signal in Signal:
            key = self.normalise(platform, forms[signal])
            if not key:
                raise ValueError(f"{platform} glyph for {signal.value} is empty")
            if key in self.reactions[platform].stop:
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

    def _platform(self, platform: str) -> Reactions:
        found = self.reactions.get(platform)
        if found is None:
            known = ", ".join(self.reactions) or "none"
            raise ValueError(f"unknown platform {platform!r}; known platforms: {known}")
        return found

    def _forms(self, platform: str) -> Mapping[Signal, str]:
        return self.forms.get(platform) or self._platform(platform).defaults

    def normalise(self, platform: str, emoji: str) -> str:
        """The canonical form of a reaction as `platform` writes it; ValueError on a platform."""
        return self._platform(platform).normalise(emoji)

    def native(self, platform: str, signal: Signal) -> str:
        """The reaction to post for `signal` on `platform`; ValueError on an unknown platform."""
        return self._forms(platform)[signal]

    def signal_for(self, platform: str, emoji: str) -> Signal | None:
        """The signal a reaction means, or None; ValueError on an unknown platform.

        Looks up the normalised emoji in this map's glyphs, then the default glyphs, then the
        signal aliases; the first hit wins.
        """
        reactions = self._platform(platform)
        key = reactions.normalise(emoji)
        for forms in (self._forms(platform), reactions.defaults):
            for signal, glyph in forms.items():
                if reactions.normalise(glyph) == key:
                    return signal
        return reactions.aliases.get(key)

    def is_stop(self, platform: str, emoji: str) -> bool:
        """Whether the reaction asks the agent to stop (🛑 or the platform's own); ✋ is not."""
        reactions = self._platform(platform)
        return reactions.normalise(emoji) in reactions.stop


def glyph_map(
    reactions: Mapping[str, Reactions], overrides: Mapping[str, Mapping[str, str]] | None = None
) -> GlyphMap:
    """A `GlyphMap` of the platforms' defaults with `overrides` applied; ValueError on a bad one.

    `overrides` is shaped like the manifest key `signals`: `{platform: {signal: glyph}}`. An
    override for a platform also applies to those that take their overrides from it
    (`Reactions.overrides_from`) unless they have their own. Unknown platforms, unknown signal
    names, empty glyphs, shared glyphs and the stop glyph are refused with a message naming the
    offending key.
    """
    overrides = overrides or {}
    for platform in overrides:
        if platform not in reactions:
            known = ", ".join(reactions) or "none"
            raise ValueError(f"unknown platform {platform!r}; known platforms: {known}")
    forms: dict[str, Mapping[Signal, str]] = {}
    for platform in _in_override_order(reactions):
        own = reactions[platform]
        source = own.overrides_from
        base = forms.get(source or "", own.defaults)
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
            merged[signal] = own.normalise(glyph) if own.store_normalised else glyph
        forms[platform] = MappingProxyType(merged)
    return GlyphMap(reactions=MappingProxyType(dict(reactions)), forms=MappingProxyType(forms))


def _in_override_order(reactions: Mapping[str, Reactions]) -> list[str]:
    """Platform names, each after the one it takes its overrides from."""
    ordered: list[str] = []

    def visit(name: str, seen: frozenset[str]) -> None:
        if name in ordered or name in seen:
            return
        source = reactions[name].overrides_from
        if source is not None and source in reactions:
            visit(source, seen | {name})
        ordered.append(name)

    for name in reactions:
        visit(name, frozenset())
    return ordered
