"""A platform's markup as the intent rules set it aside: `core.markup.prepare` per table."""

from __future__ import annotations

from core.markup import (
    CHAT_MARKUP,
    PLACEHOLDER,
    PLAIN_TEXT,
    READ_LIMIT,
    AngleTokens,
    Markup,
    prepare,
)


def test_chat_markup_removes_mentions_and_sets_custom_emoji_aside() -> None:
    text, emoji = prepare("<@U1> <@U2|ana> <!here> thanks <:ty:12> <a:wave:3>", CHAT_MARKUP)
    assert text == "thanks"
    assert len(emoji) == 2


def test_chat_markup_keeps_a_links_label_and_hides_a_channels_name() -> None:
    assert prepare("see <https://x.example|the docs>", CHAT_MARKUP)[0] == "see the docs"
    assert prepare("in <#C1|general>", CHAT_MARKUP)[0] == f"in {PLACEHOLDER}"
    assert prepare("at <!date^1|noon>", CHAT_MARKUP)[0] == "at noon"  # a date: its fallback
    assert prepare("at <t:1:R>", CHAT_MARKUP)[0] == f"at {PLACEHOLDER}"


def test_chat_markup_undoes_escapes_after_reading_tokens() -> None:
    # An escaped token is the author's text, not markup: it is read as words.
    assert prepare("&lt;@U1&gt; hi", CHAT_MARKUP)[0] == "<@u1> hi"


def test_chat_markup_hides_code_and_quotes_and_reads_shortcodes() -> None:
    text, emoji = prepare("> quoted\nrun `make` :pray:\n>>> the rest\nand more", CHAT_MARKUP)
    assert text == f"run {PLACEHOLDER}"
    assert emoji == ["pray"]


def test_plain_text_reads_every_markup_character_as_text() -> None:
    text, emoji = prepare("<@U1> &lt; `code` :pray:\n> quoted", PLAIN_TEXT)
    assert text == "<@u1> &lt; `code` :pray:\n> quoted"
    assert emoji == []


def test_plain_text_sets_aside_links_names_and_emoji() -> None:
    text, emoji = prepare("@ana see https://x.example 🙏 :)", PLAIN_TEXT)
    assert text == f"see {PLACEHOLDER}"
    assert sorted(emoji) == sorted(["🙏", "🙂"])


def test_a_token_a_table_does_not_name_is_opaque_content() -> None:
    mentions_only = Markup(tokens=AngleTokens(mentions=("@",)))
    assert prepare("<@1> <:ty:2> <#3|x>", mentions_only) == (f"{PLACEHOLDER} x", [])


def test_a_message_is_read_by_its_start_whatever_the_markup() -> None:
    for markup in (CHAT_MARKUP, PLAIN_TEXT):
        text, _ = prepare("a" * READ_LIMIT + "urgent", markup)
        assert text.endswith(PLACEHOLDER) and "urgent" not in text
