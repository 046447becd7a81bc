"""Model Markdown becomes Slack mrkdwn that shows what the model wrote, pings only whom the
agent chose, splits cleanly, and goes to the right place."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from builders import LEAD, W1, W2, local_workspace
from fuzz.bounds import timed

from adapters.slack.render import (
    FENCE,
    MAX_CHARS,
    Placement,
    mention_prefix,
    message_ref,
    place,
    render_message,
    split,
    to_mrkdwn,
)
from core.actions import Post
from core.errors import C2AError, RenderError
from core.events import Author, ChatEvent, Conversation, ConversationKind, EventKind

WORKSPACE = local_workspace()
# What Slack would turn into a ping or a link if it reached it unescaped.
NATIVE = re.compile(r"<[@#!]|(?<![\w@])@(?:here|channel|everyone)\b")


def test_bold_italic_strike_and_headings_become_mrkdwn() -> None:
    text = "# Plan\n**bold** __also bold__ *italic* ~~gone~~ snake_case 2*3*4"
    assert to_mrkdwn(text) == "*Plan*\n*bold* *also bold* _italic_ ~gone~ snake_case 2*3*4"


def test_bullets_become_bullets_and_quotes_stay_quotes() -> None:
    assert to_mrkdwn("- one\n  * two\n> said") == "• one\n  • two\n&gt; said"


def test_web_and_mail_links_become_native_links_and_others_stay_text() -> None:
    text = "[docs](https://x.example/a?b=1&c=2) <https://auto.example> [mail](mailto:a@b.c)"
    assert to_mrkdwn(text) == (
        "<https://x.example/a?b=1&amp;c=2|docs> <https://auto.example> <mailto:a@b.c|mail>"
    )
    assert to_mrkdwn("[x](javascript:alert(1)) [y](@U0W2)") == "[x](javascript:alert(1)) [y](@U0W2)"


def test_inline_and_fenced_code_keep_their_content() -> None:
    text = "run `make **all**` now\n```python\nif a < b && c:\n    print('**x**')\n```\nafter"
    assert to_mrkdwn(text) == (
        "run `make **all**` now\n```\nif a &lt; b &amp;&amp; c:\n    print('**x**')\n```\nafter"
    )


def test_an_unclosed_fence_is_closed() -> None:
    assert to_mrkdwn("look:\n```\nx = 1") == "look:\n```\nx = 1\n```"


def test_code_inside_a_link_shows_as_code_and_never_as_a_placeholder() -> None:
    assert to_mrkdwn("[`a<b`](https://x.example)") == "<https://x.example|`a&lt;b`>"
    assert to_mrkdwn("[x](https://x.example/`a`)") == "[x](https://x.example/`a`)"
    assert to_mrkdwn("<https://x.example/`a`>") == "&lt;https://x.example/`a`&gt;"


def test_ampersands_and_angle_brackets_outside_code_are_escaped() -> None:
    assert to_mrkdwn("a & b < c > d &amp;") == "a &amp; b &lt; c &gt; d &amp;amp;"


@pytest.mark.parametrize(
    "stray",
    [
        "<@U0W2>",
        "<@U0W2|bob>",
        "<!here>",
        "<!channel>",
        "<!everyone>",
        "<!subteam^S0BACK>",
        "<!subteam^S0BACK|@backend>",
        "<#C0OPS>",
        "@here",
        "@channel",
        "@everyone",
        "@Channel",
        "`<!channel>`",
        "```\n<!channel> @here\n```",
        "**<!here>**",
        "[<!channel>](https://x.example)",
    ],
)
def test_stray_mentions_in_model_text_render_harmless(stray: str) -> None:
    rendered = to_mrkdwn(f"hey {stray} look")
    outside_code = re.sub(r"```.*?```|`[^`]*`", "", rendered, flags=re.DOTALL)
    assert not re.search(r"<[@#!]", rendered)
    assert not NATIVE.search(outside_code)


# Lines on which a backtracking regex takes time quadratic in their length.
HOSTILE_LINES = {
    "heading with a long inner blank run": "# x" + " " * 100_000 + "y",
    "long backtick run": "a" + "`" * 50_000 + "a" * 50_000,
    "unclosed link labels": "[" * 100_000,
    "unclosed link targets": "[](" * 33_000,
    "unclosed bold": "**a " * 25_000,
    "unclosed italic": "*a *" * 25_000,
    "unclosed strike": "~~a " * 25_000,
}


@pytest.mark.parametrize("line", HOSTILE_LINES.values(), ids=HOSTILE_LINES.keys())
def test_a_hostile_line_becomes_mrkdwn_in_time(line: str) -> None:
    rendered = timed("to_mrkdwn", lambda: to_mrkdwn(line))
    assert len(rendered) >= len(line.strip())


def test_emphasis_pairs_each_opener_with_the_first_closer_after_it() -> None:
    text = "**a **b** c** *x *y* z* ~~p ~~q~~ r~~ __u__ **"
    assert to_mrkdwn(text) == "*a **b* c** _x *y_ z* ~p ~~q~ r~~ *u* **"


def test_code_spans_close_on_the_first_run_of_their_length() -> None:
    assert to_mrkdwn("`a` ``b`c`` ```d``` `e ``f` **g**") == "`a` ``b`c`` `d` `e ``f` *g*"


def test_text_of_many_blank_lines_is_split_in_time() -> None:
    parts = timed("split", lambda: split("\n" * 100_000 + "x"))
    assert all(len(part) <= MAX_CHARS for part in parts)
    assert "".join(parts).strip() == "x"


def test_intended_mentions_render_natively_from_the_manifest() -> None:
    prefix = mention_prefix(["agent:worker-1", "role:backend", "user:U0ALICE"], WORKSPACE)
    assert prefix == f"<@{W1}> <!subteam^S0BACK> <@U0ALICE>"


def test_a_role_without_a_user_group_mentions_its_agents() -> None:
    workspace = local_workspace(roles={"leads": {}, "backend": {}})
    assert mention_prefix(["role:backend"], workspace) == f"<@{W1}> <@{W2}>"


@pytest.mark.parametrize(
    "recipient", ["agent:nobody", "role:nobody", "user:!channel", "user:U0X|x", "group:S1"]
)
def test_a_recipient_the_manifest_cannot_resolve_is_refused(recipient: str) -> None:
    with pytest.raises(RenderError):
        mention_prefix([recipient], WORKSPACE)


def test_a_message_starts_with_the_intended_mentions_and_defuses_the_rest() -> None:
    [text] = render_message("ask <@U0W2> and <!channel> **now**", ["agent:lead"], WORKSPACE)
    assert text == f"<@{LEAD}> ask &lt;@U0W2&gt; and &lt;!channel&gt; *now*"


def test_short_text_is_one_part() -> None:
    assert split("hello\nworld") == ["hello\nworld"]


def test_long_text_is_cut_at_line_ends_within_the_limit() -> None:
    lines = [f"line {i} " + "x" * 40 for i in range(100)]
    parts = split("\n".join(lines), 500)
    assert all(len(part) <= 500 for part in parts)
    assert [line for part in parts for line in part.split("\n")] == lines


def test_a_code_block_cut_in_two_is_closed_and_reopened() -> None:
    code = [f"value_{i} = {i}" for i in range(60)]
    text = to_mrkdwn("intro\n```\n" + "\n".join(code) + "\n```\noutro")
    parts = split(text, 300)
    assert len(parts) > 2 and all(len(part) <= 300 for part in parts)
    for part in parts:
        assert part.split("\n").count(FENCE) % 2 == 0  # every part's fences balance
    inside = [line for part in parts for line in part.split("\n") if line.startswith("value_")]
    assert inside == code
    assert parts[0].startswith("intro\n```") and parts[-1].endswith("```\noutro")
    assert all(part.startswith(FENCE) for part in parts[1:-1])


def test_a_line_longer_than_the_limit_is_cut_between_words_never_inside_an_entity() -> None:
    line = " ".join(["a&amp;b"] * 200)
    parts = split(line, 100)
    assert all(len(part) <= 100 for part in parts)
    assert " ".join(parts) == line
    assert all(part.endswith("b") and part.startswith("a") for part in parts)
    unbroken = split("<https://x.example/" + "y" * 60 + "|t> " + "z" * 90, 100)
    assert unbroken[0] == "<https://x.example/" + "y" * 60 + "|t>"


@pytest.mark.parametrize("text", ["```\n" * 300, "```\n" + "\n" * 400 + "```\nafter"])
def test_code_fences_alone_in_a_part_are_kept(text: str) -> None:
    parts = split(text, 100)
    assert all(len(part) <= 100 for part in parts)
    assert "".join(parts).count(FENCE) >= text.count(FENCE)


def test_a_split_limit_too_small_for_a_fenced_line_is_refused_with_the_projects_error() -> None:
    with pytest.raises(C2AError, match="too small"):
        split("hello", 20)
    assert issubclass(RenderError, C2AError)


def test_mentions_come_before_a_fence_on_their_own_line() -> None:
    [text] = render_message("```\ncode\n```", ["agent:lead"], WORKSPACE)
    assert text == f"<@{LEAD}>\n```\ncode\n```"


def test_a_message_event_id_gives_its_channel_and_ts() -> None:
    assert message_ref("slack:T0LOCAL:C0GEN:1767225600.000100") == ("C0GEN", "1767225600.000100")
    assert message_ref("slack:T0LOCAL:C0GEN:1767225600.000100~1767225700.0") == (
        "C0GEN",
        "1767225600.000100",
    )
    assert message_ref("slack:T0LOCAL:C0GEN:1767225600.0+U1:eyes@1") is None
    assert message_ref(None) is None


def send(**changes: Any) -> Post:
    action = Post(agent="lead", platform="slack", conversation="C0GEN", key="k", text="hi")
    return replace(action, **changes)


def test_a_reply_goes_into_the_thread_the_action_names() -> None:
    assert place(send(thread="1.000100")) == Placement("C0GEN", "1.000100")
    assert place(send(conversation="C0GEN/1.000100")) == Placement("C0GEN", "1.000100")


def test_a_reply_to_a_top_level_message_goes_into_its_thread_unless_the_channel_says_not() -> None:
    reply = send(in_reply_to="slack:T0LOCAL:C0GEN:1.000200")
    assert place(reply) == Placement("C0GEN", "1.000200")
    assert place(reply, reply_in_thread=False) == Placement("C0GEN")
    assert place(replace(reply, visibility="channel")) == Placement("C0GEN")


def test_a_reply_to_a_message_in_a_thread_stays_in_that_thread() -> None:
    event = ChatEvent(
        event_id="slack:T0LOCAL:C0GEN:1.000300",
        kind=EventKind.MESSAGE,
        platform="slack",
        workspace_id="T0LOCAL",
        conversation=Conversation("C0GEN", ConversationKind.THREAD, thread_id="1.000100"),
        author=Author("U0ALICE"),
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        message_id="1.000300",
    )
    reply = send(in_reply_to=event.event_id)
    assert place(reply, event, reply_in_thread=False) == Placement("C0GEN", "1.000100")
    assert place(replace(reply, visibility="channel"), event) == Placement(
        "C0GEN", "1.000100", broadcast=True
    )


def test_a_reply_in_a_dm_is_not_threaded_on_its_own() -> None:
    reply = send(conversation="D0ALICE", in_reply_to="slack:T0LOCAL:D0ALICE:1.000400")
    assert place(reply) == Placement("D0ALICE")
