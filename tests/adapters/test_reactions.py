"""The built-in adapters' reactions in the glyph map: Slack's short names, the unicode of
Discord and the web chat, their aliases, overrides and stop reactions."""

import pytest

from adapters.slack.glyphs import DEFAULT_SLACK_NAMES
from c2a.platforms import installed
from core.signals import DEFAULT_GLYPHS, GlyphMap, Signal, glyph_map

REACTIONS = {name: platform.reactions for name, platform in installed().items()}


def test_default_map_speaks_slack_short_names_and_unicode_elsewhere() -> None:
    glyphs = glyph_map(REACTIONS)
    assert glyphs.native("slack", Signal.DONE) == "white_check_mark"
    assert glyphs.native("slack", Signal.AGREE) == "+1"
    assert glyphs.native("discord", Signal.DONE) == "✅"
    assert glyphs.native("webchat", Signal.QUEUED) == "🕐"
    assert all(
        GlyphMap(REACTIONS).native(p, s) == glyphs.native(p, s) for p in REACTIONS for s in Signal
    )


def test_every_default_glyph_reads_back_as_its_signal() -> None:
    glyphs = glyph_map(REACTIONS)
    for signal in Signal:
        assert glyphs.signal_for("slack", DEFAULT_SLACK_NAMES[signal]) is signal
        assert glyphs.signal_for("discord", DEFAULT_GLYPHS[signal]) is signal
        assert glyphs.signal_for("webchat", DEFAULT_GLYPHS[signal]) is signal


def test_slack_skin_tone_is_stripped() -> None:
    assert glyph_map(REACTIONS).normalise("slack", "+1::skin-tone-2") == "+1"
    assert glyph_map(REACTIONS).normalise("slack", "raised_hand::skin-tone-6") == "raised_hand"


def test_slack_surrounding_colons_are_stripped() -> None:
    assert glyph_map(REACTIONS).normalise("slack", ":eyes:") == "eyes"
    assert glyph_map(REACTIONS).normalise("slack", ":+1::skin-tone-3:") == "+1"


def test_slack_name_aliases_become_one_name() -> None:
    assert glyph_map(REACTIONS).normalise("slack", "thumbsup") == "+1"
    assert glyph_map(REACTIONS).normalise("slack", "thumbsdown") == "-1"
    assert glyph_map(REACTIONS).normalise("slack", "hand") == "raised_hand"


def test_distinct_slack_emoji_keep_their_names() -> None:
    assert glyph_map(REACTIONS).normalise("slack", "heavy_check_mark") == "heavy_check_mark"


def test_unicode_variation_selector_and_skin_tone_are_stripped() -> None:
    assert glyph_map(REACTIONS).normalise("discord", "☑️") == "☑"
    assert glyph_map(REACTIONS).normalise("discord", "👍🏽") == "👍"
    assert glyph_map(REACTIONS).normalise("webchat", "✋🏿") == "✋"


def test_discord_custom_emoji_becomes_name_and_id() -> None:
    assert glyph_map(REACTIONS).normalise("discord", "<:shipit:111>") == "shipit:111"
    assert glyph_map(REACTIONS).normalise("discord", "<a:party:222>") == "party:222"


def test_thumbsup_alias_reads_as_agree() -> None:
    assert glyph_map(REACTIONS).signal_for("slack", "thumbsup") is Signal.AGREE


def test_skin_toned_thumbs_up_reads_as_agree_on_both_platforms() -> None:
    glyphs = glyph_map(REACTIONS)
    assert glyphs.signal_for("slack", "+1::skin-tone-4") is Signal.AGREE
    assert glyphs.signal_for("discord", "👍🏻") is Signal.AGREE


def test_hand_reads_as_claimed() -> None:
    assert glyph_map(REACTIONS).signal_for("slack", "hand") is Signal.CLAIMED


@pytest.mark.parametrize(
    ("name", "signal"),
    [
        ("heavy_check_mark", Signal.DONE),
        ("ballot_box_with_check", Signal.DONE),
        ("hourglass_flowing_sand", Signal.QUEUED),
        ("hourglass", Signal.QUEUED),
        ("clock3", Signal.QUEUED),
        ("clock1230", Signal.QUEUED),
        ("hammer_and_wrench", Signal.WORKING),
        ("x", Signal.DECLINED),
        ("no_entry_sign", Signal.DECLINED),
        ("woman-gesturing-no", Signal.DECLINED),
        ("grey_question", Signal.UNCLEAR),
    ],
)
def test_slack_signal_aliases_are_read(name: str, signal: Signal) -> None:
    assert glyph_map(REACTIONS).signal_for("slack", name) is signal


@pytest.mark.parametrize(
    ("emoji", "signal"),
    [
        ("✔️", Signal.DONE),
        ("☑️", Signal.DONE),
        ("⏳", Signal.QUEUED),
        ("⌛", Signal.QUEUED),
        ("🕒", Signal.QUEUED),
        ("🕧", Signal.QUEUED),
        ("🛠️", Signal.WORKING),
        ("❌", Signal.DECLINED),
        ("🙅\u200d♂️", Signal.DECLINED),
        ("🙅🏽\u200d♀️", Signal.DECLINED),
        ("❔", Signal.UNCLEAR),
    ],
)
def test_unicode_signal_aliases_are_read(emoji: str, signal: Signal) -> None:
    assert glyph_map(REACTIONS).signal_for("discord", emoji) is signal


def test_an_emoji_that_is_no_signal_reads_as_none() -> None:
    glyphs = glyph_map(REACTIONS)
    assert glyphs.signal_for("slack", "tada") is None
    assert glyphs.signal_for("discord", "🎉") is None
    assert glyphs.signal_for("discord", "<:shipit:111>") is None


def test_remapped_glyph_is_used_for_native_and_read_back() -> None:
    glyphs = glyph_map(REACTIONS, {"slack": {"done": "heavy_check_mark"}, "discord": {"done": "☑️"}})
    assert glyphs.native("slack", Signal.DONE) == "heavy_check_mark"
    assert glyphs.native("discord", Signal.DONE) == "☑️"
    assert glyphs.signal_for("slack", "heavy_check_mark") is Signal.DONE
    assert glyphs.signal_for("discord", "☑") is Signal.DONE


def test_the_old_default_glyph_still_reads_as_its_signal_after_a_remap() -> None:
    glyphs = glyph_map(REACTIONS, {"slack": {"done": "heavy_check_mark"}})
    assert glyphs.signal_for("slack", "white_check_mark") is Signal.DONE


def test_the_maps_own_glyph_wins_over_an_alias() -> None:
    glyphs = glyph_map(REACTIONS, {"slack": {"agree": "heavy_check_mark"}})
    assert glyphs.signal_for("slack", "heavy_check_mark") is Signal.AGREE


def test_slack_override_is_stored_without_colons_or_skin_tone() -> None:
    glyphs = glyph_map(REACTIONS, {"slack": {"claimed": ":raising_hand::skin-tone-2:"}})
    assert glyphs.native("slack", Signal.CLAIMED) == "raising_hand"


def test_discord_override_also_applies_to_webchat() -> None:
    glyphs = glyph_map(REACTIONS, {"discord": {"seen": "👁️"}})
    assert glyphs.native("webchat", Signal.SEEN) == "👁️"


def test_webchat_override_leaves_discord_alone() -> None:
    glyphs = glyph_map(REACTIONS, {"webchat": {"seen": "👁️"}})
    assert glyphs.native("webchat", Signal.SEEN) == "👁️"
    assert glyphs.native("discord", Signal.SEEN) == "👀"


def test_unknown_signal_in_overrides_is_refused_with_its_name() -> None:
    with pytest.raises(ValueError, match=r"unknown signal 'finished' under signals\.slack"):
        glyph_map(REACTIONS, {"slack": {"finished": "heavy_check_mark"}})


def test_unknown_platform_in_overrides_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown platform 'teams'"):
        glyph_map(REACTIONS, {"teams": {"done": "✅"}})


def test_unknown_platform_is_refused_when_reading() -> None:
    with pytest.raises(ValueError, match="unknown platform"):
        glyph_map(REACTIONS).signal_for("irc", "+1")


def test_empty_override_glyph_is_refused() -> None:
    with pytest.raises(ValueError, match=r"signals\.discord\.done must be a non-empty string"):
        glyph_map(REACTIONS, {"discord": {"done": " "}})


def test_two_signals_on_one_glyph_are_refused() -> None:
    with pytest.raises(ValueError, match="used by both agree and done"):
        glyph_map(REACTIONS, {"slack": {"done": "thumbsup"}})


def test_a_signal_on_the_stop_glyph_is_refused() -> None:
    with pytest.raises(ValueError, match="stop reaction"):
        glyph_map(REACTIONS, {"discord": {"declined": "🛑"}})


def test_octagonal_sign_is_a_stop_reaction() -> None:
    assert glyph_map(REACTIONS).is_stop("slack", "octagonal_sign")
    assert glyph_map(REACTIONS).is_stop("slack", ":octagonal_sign:")
    assert glyph_map(REACTIONS).is_stop("discord", "🛑")
    assert glyph_map(REACTIONS).is_stop("webchat", "🛑\ufe0f")


def test_raised_hand_is_claimed_not_stop() -> None:
    assert not glyph_map(REACTIONS).is_stop("slack", "raised_hand")
    assert not glyph_map(REACTIONS).is_stop("discord", "✋")
    assert glyph_map(REACTIONS).signal_for("discord", "✋") is Signal.CLAIMED


def test_the_stop_reaction_is_not_a_signal() -> None:
    assert glyph_map(REACTIONS).signal_for("slack", "octagonal_sign") is None
