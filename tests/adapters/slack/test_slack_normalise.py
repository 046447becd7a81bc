"""Slack Events API bodies, recorded in their real shapes under payloads/, become these events."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.slack import extract_mentions, normalise
from adapters.slack.envelope import to_envelope
from adapters.slack.messages import parse_message
from core.attachments import Attachment
from core.errors import PayloadError
from core.events import (
    Author,
    AuthorKind,
    Broadcast,
    ChatEvent,
    Conversation,
    ConversationKind,
    EventKind,
    Mentions,
)

PAYLOADS = Path(__file__).parent / "payloads"
BUILD_TEXT = "morning <@U0LEAD>, can you look at the build?"
CHANNEL = Conversation(id="C111", kind=ConversationKind.CHANNEL)
THREAD = Conversation(id="C111", kind=ConversationKind.THREAD, thread_id="1712345678.000200")
ALICE = Author(id="U111")
BOB = Author(id="U222")


def load(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((PAYLOADS / f"{name}.json").read_text())
    return body


def message(**fields: Any) -> ChatEvent:
    """The event a plain message in C111 would give, with `fields` replaced."""
    base = ChatEvent(
        event_id="slack:T111:C111:1712345678.000200",
        kind=EventKind.MESSAGE,
        platform="slack",
        workspace_id="T111",
        conversation=CHANNEL,
        author=ALICE,
        created_at=datetime(2024, 4, 5, 19, 34, 38, 200, tzinfo=UTC),
        message_id="1712345678.000200",
        text=BUILD_TEXT,
        mentions=Mentions(users=("U0LEAD",)),
        bot_user_id="U0LEAD",
        delivery_id="Ev06AAAA0001",
    )
    return dataclasses.replace(base, **fields)


def test_a_plain_channel_message_is_a_message_event_with_microsecond_time() -> None:
    assert normalise(load("message_channel")) == message()


def test_a_dm_is_a_dm_conversation() -> None:
    assert normalise(load("message_im")) == message(
        event_id="slack:T111:D111:1712345680.000100",
        conversation=Conversation(id="D111", kind=ConversationKind.DM),
        created_at=datetime(2024, 4, 5, 19, 34, 40, 100, tzinfo=UTC),
        message_id="1712345680.000100",
        text="hi, are you around?",
        mentions=Mentions(),
        delivery_id="Ev06AAAA0003",
    )


def test_a_group_dm_is_a_dm_marked_group() -> None:
    assert normalise(load("message_mpim")) == message(
        event_id="slack:T111:G111:1712345682.000300",
        conversation=Conversation(id="G111", kind=ConversationKind.DM, group=True),
        created_at=datetime(2024, 4, 5, 19, 34, 42, 300, tzinfo=UTC),
        message_id="1712345682.000300",
        text="quick sync on the release?",
        mentions=Mentions(),
        delivery_id="Ev06AAAA0004",
    )


def test_a_thread_reply_is_a_thread_named_by_its_root_ts() -> None:
    assert normalise(load("message_thread_reply")) == message(
        event_id="slack:T111:C111:1712345690.000400",
        conversation=THREAD,
        author=BOB,
        created_at=datetime(2024, 4, 5, 19, 34, 50, 400, tzinfo=UTC),
        message_id="1712345690.000400",
        text="I can take this one",
        mentions=Mentions(),
        delivery_id="Ev06AAAA0005",
    )


def test_a_thread_root_stays_in_the_channel() -> None:
    assert normalise(load("message_thread_root")) == message(delivery_id="Ev06AAAA0006")


def test_a_thread_broadcast_is_a_thread_message_also_in_its_channel() -> None:
    assert normalise(load("message_thread_broadcast")) == message(
        event_id="slack:T111:C111:1712345700.000500",
        conversation=THREAD,
        author=BOB,
        created_at=datetime(2024, 4, 5, 19, 35, 0, 500, tzinfo=UTC),
        message_id="1712345700.000500",
        text="fixed, see the thread",
        mentions=Mentions(),
        subtype="thread_broadcast",
        delivery_id="Ev06AAAA0007",
        also_in_channel=True,
    )


def test_a_bot_message_is_by_a_bot_named_by_its_username() -> None:
    assert normalise(load("message_bot_message")) == message(
        event_id="slack:T111:C111:1712345710.000600",
        author=Author(id="B111", kind=AuthorKind.BOT, display_name="deploy-bot"),
        created_at=datetime(2024, 4, 5, 19, 35, 10, 600, tzinfo=UTC),
        message_id="1712345710.000600",
        text="Deploy of api@4f2c1d finished",
        mentions=Mentions(),
        subtype="bot_message",
        delivery_id="Ev06AAAA0008",
    )


def test_a_me_message_is_a_message_with_its_subtype() -> None:
    assert normalise(load("message_me_message")) == message(
        event_id="slack:T111:C111:1712345720.000700",
        created_at=datetime(2024, 4, 5, 19, 35, 20, 700, tzinfo=UTC),
        message_id="1712345720.000700",
        text="is grabbing coffee",
        mentions=Mentions(),
        subtype="me_message",
        delivery_id="Ev06AAAA0009",
    )


def test_a_file_share_counts_and_describes_its_files() -> None:
    assert normalise(load("message_file_share")) == message(
        event_id="slack:T111:C111:1712345730.000800",
        created_at=datetime(2024, 4, 5, 19, 35, 30, 800, tzinfo=UTC),
        message_id="1712345730.000800",
        text="logs attached",
        mentions=Mentions(),
        subtype="file_share",
        files=2,
        attachments=(
            Attachment(
                id="F111",
                name="build.log",
                mimetype="text/plain",
                size=18234,
                url="https://files.slack.com/files-pri/T111-F111/build.log",
            ),
            Attachment(
                id="F222",
                name="screenshot.png",
                mimetype="image/png",
                size=90211,
                url="https://files.slack.com/files-pri/T111-F222/screenshot.png",
            ),
        ),
        delivery_id="Ev06AAAA0010",
    )


def test_an_app_mention_and_its_message_are_the_same_event() -> None:
    from_message = normalise(load("message_channel"))
    from_mention = normalise(load("app_mention"))
    assert from_mention is not None
    assert from_message is not None
    assert from_mention.event_id == from_message.event_id
    assert from_mention == dataclasses.replace(
        from_message, delivery_id="Ev06AAAA0002", names_receiver=True
    )


def test_user_group_and_broadcast_mentions_are_read_once_in_order() -> None:
    event = normalise(load("message_mentions"))
    assert event is not None
    assert event.author == Author(id="U111", display_name="Alice Example")
    assert event.mentions == Mentions(
        users=("U222", "W333"),
        roles=("S111",),
        broadcast=(Broadcast.HERE, Broadcast.CHANNEL, Broadcast.EVERYONE),
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<@U123>", Mentions(users=("U123",))),
        ("<@U123|name> and <@W456>", Mentions(users=("U123", "W456"))),
        ("<!subteam^S123> <!subteam^S456|@team>", Mentions(roles=("S123", "S456"))),
        ("<!here> <!here|here>", Mentions(broadcast=(Broadcast.HERE,))),
        ("<!channel> <!everyone>", Mentions(broadcast=(Broadcast.CHANNEL, Broadcast.EVERYONE))),
        ("<#C111|general> <https://example.com|x> <!date^1712345678^{date}|x> @here", Mentions()),
    ],
)
def test_extract_mentions_reads_slack_markup(text: str, expected: Mentions) -> None:
    assert extract_mentions(text) == expected


def test_message_changed_is_an_edit_of_the_original_ts_with_the_new_text() -> None:
    text = "morning <@U0LEAD>, can you look at the deploy?"
    assert normalise(load("message_changed")) == message(
        event_id="slack:T111:C111:1712345678.000200~1712345900.000000",
        kind=EventKind.EDIT,
        created_at=datetime(2024, 4, 5, 19, 38, 20, tzinfo=UTC),
        text=text,
        delivery_id="Ev06AAAA0013",
    )


def test_message_changed_that_keeps_the_text_is_not_an_edit() -> None:
    assert normalise(load("message_changed_unfurl")) is None


def test_message_changed_without_an_edited_stamp_is_not_an_edit() -> None:
    body = load("message_changed")
    del body["event"]["message"]["edited"]
    assert normalise(body) is None


def test_message_deleted_names_the_deleted_message_and_its_author() -> None:
    assert normalise(load("message_deleted")) == ChatEvent(
        event_id="slack:T111:C111:1712345690.000400~deleted",
        kind=EventKind.DELETE,
        platform="slack",
        workspace_id="T111",
        conversation=THREAD,
        author=BOB,
        created_at=datetime(2024, 4, 5, 19, 40, 0, 1200, tzinfo=UTC),
        message_id="1712345690.000400",
        bot_user_id="U0LEAD",
        delivery_id="Ev06AAAA0015",
    )


def test_message_deleted_without_previous_message_has_an_unknown_author() -> None:
    body = load("message_deleted")
    del body["event"]["previous_message"]
    event = normalise(body)
    assert event is not None
    assert event.author == Author(id="")
    assert event.conversation == CHANNEL


def test_reaction_added_keeps_the_skin_tone_and_points_at_the_message() -> None:
    assert normalise(load("reaction_added_skin_tone")) == ChatEvent(
        event_id="slack:T111:C111:1712345678.000200+U222:+1::skin-tone-2@1712346100.001300",
        kind=EventKind.REACTION_ADDED,
        platform="slack",
        workspace_id="T111",
        conversation=CHANNEL,
        author=BOB,
        created_at=datetime(2024, 4, 5, 19, 41, 40, 1300, tzinfo=UTC),
        message_id="1712345678.000200",
        target_author_id="U111",
        reaction="+1::skin-tone-2",
        bot_user_id="U0LEAD",
        delivery_id="Ev06AAAA0016",
    )


def test_reaction_removed_is_named_with_a_minus() -> None:
    assert normalise(load("reaction_removed")) == ChatEvent(
        event_id="slack:T111:C111:1712345678.000200-U222:eyes@1712346150.001400",
        kind=EventKind.REACTION_REMOVED,
        platform="slack",
        workspace_id="T111",
        conversation=CHANNEL,
        author=BOB,
        created_at=datetime(2024, 4, 5, 19, 42, 30, 1400, tzinfo=UTC),
        message_id="1712345678.000200",
        target_author_id="U111",
        reaction="eyes",
        bot_user_id="U0LEAD",
        delivery_id="Ev06AAAA0017",
    )


def test_a_reaction_on_a_file_is_ignored() -> None:
    body = load("reaction_removed")
    body["event"]["item"] = {"type": "file", "file": "F111"}
    assert normalise(body) is None


def test_member_joined_channel_is_by_whoever_joined() -> None:
    assert normalise(load("member_joined_channel")) == ChatEvent(
        event_id="slack:T111:C111:joined:U333@1712346200.001500",
        kind=EventKind.MEMBER_JOINED,
        platform="slack",
        workspace_id="T111",
        conversation=CHANNEL,
        author=Author(id="U333"),
        created_at=datetime(2024, 4, 5, 19, 43, 20, 1500, tzinfo=UTC),
        user_id="U333",
        bot_user_id="U0LEAD",
        delivery_id="Ev06AAAA0018",
    )


def test_member_left_channel_is_a_member_left_event() -> None:
    assert normalise(load("member_left_channel")) == ChatEvent(
        event_id="slack:T111:C111:left:U333@1712346300.001600",
        kind=EventKind.MEMBER_LEFT,
        platform="slack",
        workspace_id="T111",
        conversation=CHANNEL,
        author=Author(id="U333"),
        created_at=datetime(2024, 4, 5, 19, 45, 0, 1600, tzinfo=UTC),
        user_id="U333",
        bot_user_id="U0LEAD",
        delivery_id="Ev06AAAA0019",
    )


def test_a_slack_connect_user_is_marked_external() -> None:
    assert normalise(load("message_slack_connect")) == message(
        event_id="slack:T111:C222:1712345750.001000",
        conversation=Conversation(id="C222", kind=ConversationKind.CHANNEL),
        author=Author(id="U999", display_name="carol", external=True),
        created_at=datetime(2024, 4, 5, 19, 35, 50, 1000, tzinfo=UTC),
        message_id="1712345750.001000",
        text="hello from the partner side",
        mentions=Mentions(),
        delivery_id="Ev06AAAA0012",
    )


@pytest.mark.parametrize("name", ["emoji_changed", "message_channel_join", "url_verification"])
def test_unhandled_event_types_and_subtypes_are_ignored(name: str) -> None:
    assert normalise(load(name)) is None


def test_a_hidden_message_is_ignored() -> None:
    body = load("message_channel")
    body["event"]["hidden"] = True
    assert normalise(body) is None


def test_unknown_extra_fields_are_ignored() -> None:
    body = load("message_channel")
    body["shiny_new_field"] = {"nested": [1, 2]}
    body["event"]["assistant_thread"] = {"action_token": "x"}
    body["event"]["metadata"] = {"event_type": "deploy", "event_payload": {}}
    assert normalise(body) == message()


def test_a_message_missing_ts_raises_payload_error_naming_the_field() -> None:
    body = load("message_channel")
    del body["event"]["ts"]
    with pytest.raises(PayloadError, match=r"event\.ts") as raised:
        normalise(body)
    assert raised.value.details == {"field": "event.ts"}


def test_a_message_missing_channel_raises_payload_error_naming_the_field() -> None:
    body = load("message_channel")
    del body["event"]["channel"]
    with pytest.raises(PayloadError, match=r"event\.channel") as raised:
        normalise(body)
    assert raised.value.details == {"field": "event.channel"}


def test_a_field_of_the_wrong_type_raises_payload_error() -> None:
    body = load("message_channel")
    body["event"]["text"] = ["not", "text"]
    with pytest.raises(PayloadError, match=r"event\.text") as raised:
        normalise(body)
    assert raised.value.details == {"field": "event.text"}


def test_a_malformed_ts_raises_payload_error() -> None:
    body = load("message_channel")
    body["event"]["ts"] = "yesterday"
    with pytest.raises(PayloadError, match=r"event\.ts"):
        normalise(body)


def test_the_authorizations_user_becomes_bot_user_id() -> None:
    body = load("message_channel")
    body["authorizations"][0]["user_id"] = "U0OTHER"
    event = normalise(body)
    assert event is not None
    assert event.bot_user_id == "U0OTHER"


def test_without_authorizations_there_is_no_bot_user_id() -> None:
    body = load("message_channel")
    del body["authorizations"]
    assert normalise(body) == message(bot_user_id=None)


def test_the_workspace_falls_back_to_the_event_team() -> None:
    body = load("message_channel")
    del body["team_id"]
    assert normalise(body) == message()


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"thread_ts": "1712345600.000100"},
        {"thread_ts": "1712345678.000200"},
        {"channel": "D111", "channel_type": "im"},
        {"channel": "G111", "channel_type": "mpim"},
        {"files": [{"id": "F111"}]},
        {"text": None},
        {"text": "<#C111|general> <!here>"},
        {"ts": "1712345678.5"},
        {"user_team": "T111", "source_team": "T111"},
        {"user_profile": {"display_name": "Alice"}},
        {"bot_id": "B111"},
    ],
)
def test_a_plain_message_normalises_as_the_general_message_parser_does(
    fields: dict[str, Any],
) -> None:
    body = load("message_channel")
    body["event"].update(fields)
    assert normalise(body) == parse_message(to_envelope(body), body["event"])


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"authorizations": "U0LEAD", "ts": "yesterday"}, "authorizations"),
        ({"event_id": 7, "channel": None}, "event_id"),
        ({"files": "F111", "ts": "yesterday"}, "event.ts"),
        ({"ts": "12."}, "event.ts"),
    ],
)
def test_a_plain_message_reports_the_first_problem_the_general_parser_would(
    fields: dict[str, Any], field: str
) -> None:
    body = load("message_channel")
    for key, value in fields.items():
        (body if key in body else body["event"])[key] = value
    with pytest.raises(PayloadError) as raised:
        normalise(body)
    assert raised.value.details == {"field": field}


@pytest.mark.parametrize(
    ("where", "key", "value", "field"),
    [
        ("event", "ts", "9" * 5000, "event.ts"),  # past int()'s digit limit
        ("event", "ts", "99999999999999.000100", "event.ts"),  # year 3170843: past datetime's
        ("event", "ts", "1712345678." + "0" * 5000, "event.ts"),
        ("event", "text", "x" * 200_000, "event.text"),
        ("event", "channel", "C" * 5000, "event.channel"),
        ("event", "user", "U" * 5000, "event.user"),
        ("body", "team_id", "T" * 5000, "team_id"),
        ("body", "event_time", 10**5000, "event_time"),
        ("body", "event_time", -1, "event_time"),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 30 else "-",
)
def test_absurd_numbers_and_over_long_strings_raise_payload_error_naming_the_field(
    where: str, key: str, value: Any, field: str
) -> None:
    for name in ("message_channel", "app_mention"):  # the plain-message path and the general one
        body = load(name)
        (body if where == "body" else body["event"])[key] = value
        with pytest.raises(PayloadError) as raised:
            normalise(body)
        assert raised.value.details == {"field": field}
        assert len(str(raised.value)) < 200  # the value is quoted short, never whole


def test_a_reaction_with_only_an_absurd_event_time_raises_payload_error() -> None:
    body = load("reaction_added_skin_tone")
    del body["event"]["event_ts"]
    body["event_time"] = 10**5000
    with pytest.raises(PayloadError) as raised:
        normalise(body)
    assert raised.value.details == {"field": "event_time"}


@pytest.mark.parametrize("body", [[], "event_callback", 7, None])
def test_a_body_that_is_not_an_object_raises_payload_error(body: Any) -> None:
    with pytest.raises(PayloadError, match="object"):
        normalise(body)
