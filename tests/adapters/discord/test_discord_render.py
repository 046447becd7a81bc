"""Rendering outbound actions for Discord: parts, fences, mentions, nonces, glyphs. Pure."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from builders import D_BACKEND_ROLE, D_HUMAN, D_W1, discord_post, local_workspace
from fuzz.bounds import timed

from adapters.discord.render import (
    MESSAGE_LIMIT,
    Mention,
    allowed_mentions,
    mention_prefix,
    nonce_for,
    render_reaction,
    render_send,
    reply_message_id,
    resolve_mentions,
    split_text,
    units,
)
from c2a.platforms import installed
from core.action_records import from_record, to_record
from core.actions import Edit, Post, React
from core.errors import RenderError, StoreError
from core.signals import Signal, glyph_map

REACTIONS = {name: platform.reactions for name, platform in installed().items()}

WORKSPACE = local_workspace()


def send(text: str, mentions: list[str] | None = None) -> Post:
    return discord_post(text, mentions or (), in_reply_to="discord:1240000000000000001")


# -- splitting ----------------------------------------------------------------------------------


def test_a_short_message_is_one_part_as_written() -> None:
    assert split_text("deploy is green\n\n- api\n- web") == ("deploy is green\n\n- api\n- web",)


def test_a_long_message_is_cut_at_a_line_break_and_loses_nothing() -> None:
    lines = [f"{i:03d} " + "word " * 15 for i in range(30)]
    text = "\n".join(line.strip() for line in lines)
    assert len(text) > MESSAGE_LIMIT

    first, second = split_text(text)

    assert len(first) <= MESSAGE_LIMIT and len(second) <= MESSAGE_LIMIT
    assert first + "\n" + second == text


def test_a_line_too_long_for_one_part_is_cut_at_a_space() -> None:
    text = "lorem ipsum " * 300

    parts = split_text(text.strip())

    assert all(len(p) <= MESSAGE_LIMIT for p in parts)
    assert " ".join(parts) == text.strip()
    assert all(not p.startswith(" ") and not p.endswith(" ") for p in parts)


def test_a_run_without_spaces_is_cut_exactly_at_the_limit() -> None:
    parts = split_text("a" * 4500)
    assert [len(p) for p in parts] == [1996, 1996, 508]  # room for a closing fence is kept


def test_a_code_fence_is_closed_and_reopened_with_its_language() -> None:
    code = "\n".join(f"SELECT {i} FROM t;  -- {'x' * 30}" for i in range(80))
    text = f"Try this:\n```sql\n{code}\n```\nThen commit."

    parts = split_text(text)

    assert len(parts) == 3
    assert parts[0].startswith("Try this:\n```sql\n") and parts[0].endswith("\n```")
    assert parts[1].startswith("```sql\nSELECT") and parts[1].endswith("\n```")
    assert parts[2].startswith("```sql\nSELECT") and parts[2].endswith("```\nThen commit.")
    assert all(p.count("```") % 2 == 0 for p in parts)
    assert all(len(p) <= MESSAGE_LIMIT for p in parts)


def test_a_fence_closed_before_the_cut_is_not_reopened() -> None:
    text = "```\nshort\n```\n" + "\n".join(f"plain prose line number {i}" for i in range(120))

    parts = split_text(text)

    assert len(parts) == 2
    assert parts[0].startswith("```\nshort\n```\nplain") and not parts[0].endswith("```")
    assert parts[1].startswith("plain prose")


def test_astral_characters_count_twice_as_discord_may_count_them() -> None:
    parts = split_text("😀" * 1500)

    assert units("😀") == 2
    assert [units(p) for p in parts] == [1996, 1004]


def test_an_emoji_joined_by_zwj_is_never_cut_apart() -> None:
    coder = "👩\u200d💻"  # woman, zero-width joiner, laptop
    parts = split_text(coder * 700)

    assert all(units(p) <= MESSAGE_LIMIT for p in parts)
    assert "".join(parts) == coder * 700
    assert all(p.startswith("👩") and p.endswith("💻") for p in parts)


def test_random_texts_always_give_parts_within_the_limit_with_balanced_fences() -> None:
    rng = random.Random(4)
    vocabulary = ["word", "```", "```py", "\n", "\n\n", "😀", "x" * 300, " ", "<@123>"]
    for _ in range(200):
        text = "".join(rng.choice(vocabulary) + rng.choice(["", " ", "\n"]) for _ in range(400))
        if not text.strip():
            continue
        parts = split_text(text, limit=500, prefix="<@900000000000000002> ")

        assert parts and all(0 < units(p) <= 500 for p in parts)
        assert parts[0].startswith("<@900000000000000002>")
        # Every part but the last closes the fences it opens (the text itself may not).
        assert all(p.count("```") % 2 == 0 for p in parts[:-1])


@pytest.mark.parametrize("blank", [" ", "\n", "\t", " \n"])
@pytest.mark.parametrize("prefix", ["", "<@900000000000000002> "])
def test_a_text_opening_with_a_whitespace_run_longer_than_a_part_is_split_in_time(
    blank: str, prefix: str
) -> None:
    text = blank * 3000 + "hello"

    parts = timed("split_text", lambda: split_text(text, prefix=prefix))

    assert len(parts) == 1 and units(parts[0]) <= MESSAGE_LIMIT
    assert parts[0].startswith(prefix.strip()) and parts[0].endswith("hello")


def test_blank_lines_longer_than_a_part_inside_a_code_block_are_split_in_time() -> None:
    text = "```py\n" + "x = 1\n" * 300 + "\n" * 2500 + "z" * 3000 + "\n```"

    parts = timed("split_text", lambda: split_text(text))

    assert all(units(p) <= MESSAGE_LIMIT for p in parts)
    assert all(p.count("```") % 2 == 0 for p in parts)
    assert "".join(parts).count("z") == 3000


def test_a_character_sequence_longer_than_a_part_is_cut_where_the_part_ends() -> None:
    text = "e" + "\u0301" * 5000  # one letter with 5,000 combining accents

    parts = timed("split_text", lambda: split_text(text))

    assert [units(p) for p in parts] == [1996, 1996, 1009]
    assert "".join(parts) == text


def test_mentions_that_leave_no_room_are_refused() -> None:
    with pytest.raises(RenderError, match="no room"):
        split_text("hi", limit=20, prefix="<@900000000000000002> <@900000000000000003> ")


def test_a_part_limit_too_small_for_a_reopened_fence_is_refused() -> None:
    with pytest.raises(RenderError, match="reopened code fence"):
        split_text("```py\nx\n```", limit=40)


# -- mentions -----------------------------------------------------------------------------------


def test_recipients_become_discord_mentions_in_order_without_repeats() -> None:
    mentions = resolve_mentions(
        ["agent:worker-1", "role:backend", f"user:{D_HUMAN}", "agent:worker-1"], WORKSPACE
    )

    assert mentions == (
        Mention("user", D_W1),
        Mention("role", D_BACKEND_ROLE),
        Mention("user", D_HUMAN),
    )
    assert mention_prefix(mentions, "hi") == f"<@{D_W1}> <@&{D_BACKEND_ROLE}> <@{D_HUMAN}> "
    assert mention_prefix(mentions, "```\ncode\n```").endswith(">\n")
    assert mention_prefix((), "hi") == ""


@pytest.mark.parametrize(
    ("recipient", "problem"),
    [
        ("agent:nobody", "cannot mention 'agent:nobody'"),
        ("role:nobody", "cannot mention 'role:nobody'"),
        ("user:U0ALICE", "cannot mention 'user:U0ALICE'"),
        ("broadcast:everyone", "cannot mention 'broadcast:everyone'"),
    ],
)
def test_a_recipient_with_no_discord_form_is_refused(recipient: str, problem: str) -> None:
    with pytest.raises(RenderError, match=problem):
        resolve_mentions([recipient], WORKSPACE)


def test_a_role_with_no_discord_role_bound_is_refused_rather_than_guessed() -> None:
    workspace = local_workspace(roles={"leads": {}, "backend": {}})
    with pytest.raises(RenderError, match=r"roles\.backend\.discord_roles"):
        resolve_mentions(["role:backend"], workspace)


def test_the_allow_list_names_only_the_chosen_users_and_roles_and_never_everyone() -> None:
    chosen = (Mention("user", D_W1), Mention("role", D_BACKEND_ROLE))

    assert allowed_mentions(chosen) == {
        "parse": [],
        "users": [D_W1],
        "roles": [D_BACKEND_ROLE],
        "replied_user": False,
    }
    assert allowed_mentions() == {"parse": [], "users": [], "roles": [], "replied_user": False}


def test_only_the_first_part_may_ping_and_it_starts_with_the_mentions() -> None:
    text = "@everyone " + "please look " * 300

    rendered = render_send(send(text, ["agent:worker-1"]), WORKSPACE)

    first, *rest = rendered.parts
    assert first.text.startswith(f"<@{D_W1}> @everyone please")
    assert first.allowed_mentions["users"] == [D_W1]
    assert first.allowed_mentions["parse"] == []
    assert rest and all(p.allowed_mentions["users"] == [] for p in rest)
    assert rendered.reply_to == "1240000000000000001"


def test_an_action_without_text_or_key_cannot_be_rendered() -> None:
    with pytest.raises(RenderError, match="needs text"):
        render_send(send("   \n "), WORKSPACE)
    with pytest.raises(RenderError, match="idempotencyKey"):
        render_send(replace(send("hi"), key=""), WORKSPACE)
    with pytest.raises(StoreError, match="idempotencyKey"):  # nor can its record be read
        from_record({**to_record(send("hi")), "idempotencyKey": None})


def test_an_edit_renders_its_new_text_and_answers_nothing() -> None:
    edit = Edit(
        agent="lead",
        platform="discord",
        conversation="820000000000000001",
        key="k:edit",
        message_id="1240000000000000002",
        text="ok",
    )
    rendered = render_send(edit, WORKSPACE)
    assert [p.text for p in rendered.parts] == ["ok"] and rendered.reply_to is None


# -- ids, nonces, reactions ---------------------------------------------------------------------


def test_a_nonce_is_stable_per_key_and_part_and_fits_discord() -> None:
    nonce = nonce_for("k1", 0)

    assert nonce == nonce_for("k1", 0)
    assert len({nonce, nonce_for("k1", 1), nonce_for("k2", 0)}) == 3
    assert len(nonce) == 25 and nonce.startswith("c2a") and not nonce.isdecimal()


@pytest.mark.parametrize(
    ("event_id", "expected"),
    [
        ("discord:1240000000000000001", "1240000000000000001"),
        ("discord:1240000000000000001~2024-05-14T09:00:00", "1240000000000000001"),
        ("discord:1240000000000000001~reminder", "1240000000000000001"),
        ("discord:typing:820000000000000001:810000000000000001@1", None),
        ("discord:thread:820000000000000077", None),
        (None, None),
    ],
)
def test_the_message_replied_to_comes_from_the_event_id(
    event_id: str | None, expected: str | None
) -> None:
    assert reply_message_id(event_id) == expected
    assert render_send(replace(send("hi"), in_reply_to=event_id), WORKSPACE).reply_to == expected


def test_a_reaction_uses_the_workspace_glyph_and_names_what_it_supersedes() -> None:
    glyphs = glyph_map(REACTIONS, {"discord": {"done": "☑️"}})

    def react(signal: Signal | None, emoji: str | None = None) -> React:
        return React(
            agent="lead",
            platform="discord",
            conversation="820000000000000001",
            key="k",
            message_id="1240000000000000001",
            signal=signal,
            emoji=emoji,
        )

    done = render_reaction(react(Signal.DONE), glyphs)
    seen = render_reaction(react(Signal.SEEN), glyphs)

    assert done.glyph == "☑️" and Signal.WORKING in done.superseded
    assert seen.glyph == "👀" and seen.superseded == {Signal.BLOCKED}
    with pytest.raises(RenderError, match="names no signal"):
        render_reaction(react(None, emoji="eyes"), glyphs)
    with pytest.raises(StoreError, match="thumbs"):  # an unknown signal is never read
        from_record({**to_record(react(Signal.SEEN)), "signal": "thumbs"})
