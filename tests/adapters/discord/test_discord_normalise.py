"""Discord gateway dispatches, in recorded shapes, normalise to whole expected core events."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.discord import normalise
from adapters.discord.fields import snowflake_time
from adapters.discord.normalise import PARSERS
from adapters.discord.types import MessageUpdateEvent
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

GUILD = "800000000000000401"
OPS = "800000000000000101"
DM = "800000000000000102"
REVIEWERS_ROLE = "800000000000000202"
ADA = "800000000000000301"
BOB = "800000000000000302"
REVIEWER_BOT = "800000000000000303"
DEPLOY_BOT = "800000000000000304"
CAROL = "800000000000000305"
# The reviewer bot's message that the replies and the heart reaction point at.
REVIEWER_MESSAGE = "1239869816832000014"
THREAD = "1239872837150310400"

IN_OPS = Conversation(id=OPS, kind=ConversationKind.CHANNEL)
DEPLOY_LOG = Attachment(
    id="800000000000000601",
    name="deploy-482.log",
    mimetype="text/plain; charset=utf-8",
    size=18342,
    url="https://cdn.discordapp.com/attachments/800000000000000101/"
    "800000000000000601/deploy-482.log?ex=6644a1f0&is=66435070&hm=00",
)
ADA_AUTHOR = Author(id=ADA, display_name="Ada (ops)")
BOB_AUTHOR = Author(id=BOB, display_name="Bob K")


def load(name: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads((PAYLOADS / name).read_text(encoding="utf-8"))
    return payload


def at(hour: int, minute: int, second: int, ms: int = 0) -> datetime:
    return datetime(2024, 5, 14, hour, minute, second, ms * 1000, tzinfo=UTC)


def message(message_id: str, **fields: Any) -> ChatEvent:
    """A guild message in #ops; `fields` override the rest."""
    base: dict[str, Any] = {
        "event_id": f"discord:{message_id}",
        "kind": EventKind.MESSAGE,
        "platform": "discord",
        "workspace_id": GUILD,
        "conversation": IN_OPS,
        "message_id": message_id,
    }
    return ChatEvent(**(base | fields))


def test_a_guild_channel_message_is_a_message_in_that_channel() -> None:
    assert normalise(load("message_create_guild.json")) == ChatEvent(
        event_id="discord:1239870099997851649",
        kind=EventKind.MESSAGE,
        platform="discord",
        workspace_id=GUILD,
        conversation=Conversation(id=OPS, kind=ConversationKind.CHANNEL),
        author=Author(id=ADA, kind=AuthorKind.HUMAN, display_name="Ada (ops)"),
        created_at=at(9, 21, 7, 512),
        message_id="1239870099997851649",
        text="can someone look at the deploy logs? the 09:15 run failed again",
        files=1,
        attachments=(DEPLOY_LOG,),
    )


def test_a_direct_message_has_no_guild_so_it_is_a_dm_in_the_me_workspace() -> None:
    assert normalise(load("message_create_dm.json")) == ChatEvent(
        event_id="discord:1239870450188681218",
        kind=EventKind.MESSAGE,
        platform="discord",
        workspace_id="@me",
        conversation=Conversation(id=DM, kind=ConversationKind.DM),
        # No nickname outside guilds and no global name: the username is all there is.
        author=Author(id=CAROL, display_name="carol_w"),
        created_at=at(9, 22, 31, 4),
        message_id="1239870450188681218",
        text="hey, are you around? quick question about the release notes",
    )


def test_a_message_from_a_bot_has_a_bot_author() -> None:
    assert normalise(load("message_create_bot.json")) == message(
        "1239870581243904003",
        author=Author(id=DEPLOY_BOT, kind=AuthorKind.BOT, display_name="deploy-bot"),
        created_at=at(9, 23, 2, 250),
        text="Deploy #482 failed at step `migrate` (exit 1)",
    )


def test_a_webhook_message_has_a_bot_author_although_the_user_is_not_flagged_bot() -> None:
    assert normalise(load("message_create_webhook.json")) == message(
        "1239873228197855244",
        author=Author(id="800000000000000701", kind=AuthorKind.BOT, display_name="GitHub"),
        created_at=at(9, 33, 33, 333),
    )


def test_direct_user_mentions_in_either_form_list_the_mentioned_ids() -> None:
    text = "<@800000000000000303> and <@!800000000000000301> can you pair on the migration?"
    assert normalise(load("message_create_user_mentions.json")) == message(
        "1239871015861878788",
        author=BOB_AUTHOR,
        created_at=at(9, 24, 45, 871),
        text=text,
        mentions=Mentions(users=(REVIEWER_BOT, ADA)),
    )


def test_a_role_mention_lists_the_role() -> None:
    assert normalise(load("message_create_role_mention.json")) == message(
        "1239871117443727365",
        author=ADA_AUTHOR,
        created_at=at(9, 25, 10, 90),
        text="<@&800000000000000202> PR #311 needs a second pair of eyes",
        mentions=Mentions(roles=(REVIEWERS_ROLE,)),
    )


def test_at_everyone_is_an_everyone_broadcast() -> None:
    assert normalise(load("message_create_everyone.json")) == message(
        "1239871328178143238",
        author=ADA_AUTHOR,
        created_at=at(9, 26, 0, 333),
        text="@everyone deploys are frozen until 14:00 UTC",
        mentions=Mentions(broadcast=(Broadcast.EVERYONE,)),
    )


def test_at_here_is_a_here_broadcast_although_discord_flags_it_mention_everyone() -> None:
    assert normalise(load("message_create_here.json")) == message(
        "1239871641849167879",
        author=ADA_AUTHOR,
        created_at=at(9, 27, 15, 118),
        text="@here anyone free for a quick review?",
        mentions=Mentions(broadcast=(Broadcast.HERE,)),
    )


@pytest.mark.parametrize(
    ("content", "broadcast"),
    [
        ("@here and @everyone, sorry", (Broadcast.EVERYONE, Broadcast.HERE)),
        ("", (Broadcast.EVERYONE,)),
    ],
)
def test_a_broadcast_names_what_the_text_says_and_defaults_to_everyone(
    content: str, broadcast: tuple[Broadcast, ...]
) -> None:
    dispatch = load("message_create_everyone.json")
    dispatch["d"]["content"] = content
    event = normalise(dispatch)
    assert event is not None
    assert event.mentions == Mentions(broadcast=broadcast)


def test_text_without_the_mention_everyone_flag_is_no_broadcast() -> None:
    dispatch = load("message_create_guild.json")
    dispatch["d"]["content"] = "we could ping @everyone, but let's not"
    event = normalise(dispatch)
    assert event is not None
    assert event.mentions == Mentions()


def test_a_reply_with_its_ping_on_mentions_the_replied_author_and_points_at_the_message() -> None:
    assert normalise(load("message_create_reply.json")) == message(
        "1239872000554434568",
        author=BOB_AUTHOR,
        created_at=at(9, 28, 40, 640),
        text="it isn't, it ran twice",
        mentions=Mentions(users=(REVIEWER_BOT,)),
        reply_to=REVIEWER_MESSAGE,
        target_author_id=REVIEWER_BOT,
    )


def test_a_reply_with_its_ping_off_still_points_at_the_message_and_its_author() -> None:
    assert normalise(load("message_create_reply_no_ping.json")) == message(
        "1239872354415280137",
        author=ADA_AUTHOR,
        created_at=at(9, 30, 5, 7),
        text="same here, see the log above",
        reply_to=REVIEWER_MESSAGE,
        target_author_id=REVIEWER_BOT,
    )


def test_a_reply_to_a_deleted_message_has_no_target_author() -> None:
    dispatch = load("message_create_reply_no_ping.json")
    dispatch["d"]["referenced_message"] = None
    event = normalise(dispatch)
    assert event is not None
    assert (event.reply_to, event.target_author_id) == (REVIEWER_MESSAGE, None)


def test_a_forwarded_message_is_not_a_reply() -> None:
    dispatch = load("message_create_guild.json")
    dispatch["d"]["message_reference"] = {
        "type": 1,
        "channel_id": "800000000000000109",
        "message_id": "1239860000000000001",
        "guild_id": GUILD,
    }
    dispatch["d"]["message_snapshots"] = [{"message": {"content": "quoted", "type": 0}}]
    event = normalise(dispatch)
    assert event is not None
    assert event.reply_to is None


@pytest.mark.parametrize(
    "payload", ["message_create_member_join.json", "message_create_thread_created.json"]
)
def test_a_system_message_is_not_a_message(payload: str) -> None:
    assert normalise(load(payload)) is None


@pytest.mark.parametrize("message_type", [20, 23])
def test_command_messages_are_messages(message_type: int) -> None:
    dispatch = load("message_create_bot.json")
    dispatch["d"]["type"] = message_type
    event = normalise(dispatch)
    assert event is not None
    assert event.kind is EventKind.MESSAGE


def test_an_edit_is_named_and_dated_by_its_edit_time() -> None:
    edited_at = "2024-05-14T09:22:10.118000+00:00"
    assert normalise(load("message_update_edit.json")) == ChatEvent(
        event_id=f"discord:1239870099997851649~{edited_at}",
        kind=EventKind.EDIT,
        platform="discord",
        workspace_id=GUILD,
        conversation=IN_OPS,
        author=ADA_AUTHOR,
        created_at=at(9, 22, 10, 118),
        message_id="1239870099997851649",
        text="can someone look at the deploy logs? the 09:15 and 09:20 runs failed",
        files=1,
        attachments=(DEPLOY_LOG,),
    )


def test_an_edit_without_its_author_has_an_empty_author() -> None:
    dispatch = load("message_update_edit.json")
    del dispatch["d"]["author"], dispatch["d"]["member"]
    event = normalise(dispatch)
    assert event is not None
    assert event.author == Author(id="")


def test_an_update_without_an_edit_time_is_an_embed_unfurl_not_an_edit() -> None:
    assert normalise(load("message_update_embed_unfurl.json")) is None


def test_a_partial_update_with_only_embeds_is_not_an_edit() -> None:
    dispatch = {
        "op": 0,
        "s": 40,
        "t": "MESSAGE_UPDATE",
        "d": {
            "id": "1239870450188681218",
            "channel_id": OPS,
            "guild_id": GUILD,
            "embeds": [{"type": "link", "url": "https://example.com/"}],
        },
    }
    assert normalise(dispatch) is None


def test_a_delete_of_a_message_never_seen_is_dated_by_its_snowflake() -> None:
    assert normalise(load("message_delete.json")) == ChatEvent(
        event_id="discord:1239870099997851649~deleted",
        kind=EventKind.DELETE,
        platform="discord",
        workspace_id=GUILD,
        conversation=IN_OPS,
        author=Author(id=""),
        # The deleted message's own creation time: the payload has no other.
        created_at=at(9, 21, 7, 512),
        message_id="1239870099997851649",
    )


def test_a_bulk_delete_carries_each_message_once_as_its_own_delete() -> None:
    bulk = normalise(load("message_delete_bulk.json"))
    assert bulk is not None and bulk.kind is EventKind.DELETE
    single = normalise(load("message_delete.json"))
    assert single is not None
    [first, second] = bulk.batch
    assert first == single
    assert second.event_id == "discord:1239869816832000014~deleted"
    assert second.message_id == "1239869816832000014" and second.conversation == IN_OPS


def test_a_bulk_delete_of_nothing_is_no_event_and_of_too_many_an_error() -> None:
    d = {"ids": [], "channel_id": OPS, "guild_id": GUILD}
    assert normalise({"op": 0, "t": "MESSAGE_DELETE_BULK", "d": d}) is None
    d = {**d, "ids": [str(10**18 + n) for n in range(1001)]}
    with pytest.raises(PayloadError, match="at most 1,000"):
        normalise({"op": 0, "t": "MESSAGE_DELETE_BULK", "d": d})


def test_reactions_cleared_are_removals_with_no_author() -> None:
    cleared = normalise(load("message_reaction_remove_all.json"))
    one = normalise(load("message_reaction_remove_emoji.json"))
    assert cleared is not None and one is not None
    assert (cleared.kind, cleared.author, cleared.reaction) == (
        EventKind.REACTION_REMOVED,
        Author(id=""),
        None,
    )
    assert cleared.event_id == "discord:1239869816832000014-*"
    assert (one.kind, one.author, one.reaction) == (EventKind.REACTION_REMOVED, Author(id=""), "✅")
    assert one.event_id == "discord:1239869816832000014-*:✅"


def test_a_unicode_reaction_keeps_its_variation_selector() -> None:
    heart = "\u2764\ufe0f"
    assert normalise(load("message_reaction_add_unicode.json")) == ChatEvent(
        event_id=f"discord:{REVIEWER_MESSAGE}+{ADA}:{heart}",
        kind=EventKind.REACTION_ADDED,
        platform="discord",
        workspace_id=GUILD,
        conversation=IN_OPS,
        author=ADA_AUTHOR,
        created_at=at(9, 20, 0),
        message_id=REVIEWER_MESSAGE,
        target_author_id=REVIEWER_BOT,
        reaction=heart,
    )


def test_a_custom_emoji_reaction_is_named_by_name_and_id() -> None:
    assert normalise(load("message_reaction_add_custom.json")) == ChatEvent(
        event_id=f"discord:1239870099997851649+{BOB}:shipit:800000000000000501",
        kind=EventKind.REACTION_ADDED,
        platform="discord",
        workspace_id=GUILD,
        conversation=IN_OPS,
        author=BOB_AUTHOR,
        created_at=at(9, 21, 7, 512),
        message_id="1239870099997851649",
        target_author_id=ADA,
        reaction="shipit:800000000000000501",
    )


def test_a_reaction_from_a_bot_member_has_a_bot_author() -> None:
    dispatch = load("message_reaction_add_custom.json")
    dispatch["d"]["member"]["user"]["bot"] = True
    event = normalise(dispatch)
    assert event is not None
    assert event.author == Author(id=BOB, kind=AuthorKind.BOT, display_name="Bob K")


def test_a_removed_reaction_has_a_minus_in_its_id_and_no_member() -> None:
    heart = "\u2764\ufe0f"
    assert normalise(load("message_reaction_remove.json")) == ChatEvent(
        event_id=f"discord:{REVIEWER_MESSAGE}-{ADA}:{heart}",
        kind=EventKind.REACTION_REMOVED,
        platform="discord",
        workspace_id=GUILD,
        conversation=IN_OPS,
        author=Author(id=ADA),
        created_at=at(9, 20, 0),
        message_id=REVIEWER_MESSAGE,
        reaction=heart,
    )


def test_typing_start_is_typing_dated_by_its_unix_timestamp() -> None:
    assert normalise(load("typing_start.json")) == ChatEvent(
        event_id=f"discord:typing:{OPS}:{BOB}@1715679301",
        kind=EventKind.TYPING,
        platform="discord",
        workspace_id=GUILD,
        conversation=IN_OPS,
        author=BOB_AUTHOR,
        created_at=at(9, 35, 1),
    )


def test_thread_create_names_the_thread_its_parent_and_its_starter() -> None:
    assert normalise(load("thread_create.json")) == ChatEvent(
        event_id=f"discord:thread:{THREAD}",
        kind=EventKind.THREAD_CREATED,
        platform="discord",
        workspace_id=GUILD,
        conversation=Conversation(
            id=THREAD, kind=ConversationKind.THREAD, thread_id=THREAD, parent_id=OPS
        ),
        author=Author(id=ADA),
        created_at=at(9, 32, 0, 100),
        text="deploy 482 postmortem",
    )


@pytest.mark.parametrize(
    "dispatch",
    [
        pytest.param(load("presence_update.json"), id="PRESENCE_UPDATE"),
        pytest.param({"op": 0, "s": 2, "t": "GUILD_AUDIT_LOG_ENTRY_CREATE", "d": {}}, id="other"),
        pytest.param({"op": 0, "s": 3, "t": "SOMETHING_DISCORD_ADDS_NEXT_YEAR"}, id="future"),
        pytest.param(
            {"op": 0, "s": 4, "t": "MESSAGE_DELETE_BULK", "d": {"ids": [], "channel_id": OPS}},
            id="bulk-delete",
        ),
        pytest.param({"op": 11, "d": None}, id="heartbeat-ack"),
        pytest.param({"op": 0, "s": 5, "t": None, "d": None}, id="no-name"),
    ],
)
def test_an_unhandled_dispatch_is_ignored(dispatch: dict[str, Any]) -> None:
    assert normalise(dispatch) is None


def test_unknown_extra_fields_are_ignored() -> None:
    plain = load("message_create_reply.json")
    extended = copy.deepcopy(plain)
    extended["x_trace"] = ["gateway-prd-us-east1-c-7xjh"]
    extended["d"]["poll_v3"] = {"question": {"text": "?"}}
    extended["d"]["author"]["display_name_styles"] = {"font_id": 3}
    extended["d"]["mentions"][0]["avatar_frame"] = None
    extended["d"]["message_reference"]["thread_hint"] = True
    assert normalise(extended) == normalise(plain)


def test_a_message_without_channel_id_raises_a_payload_error_naming_it() -> None:
    dispatch = load("message_create_guild.json")
    del dispatch["d"]["channel_id"]
    with pytest.raises(PayloadError) as raised:
        normalise(dispatch)
    assert raised.value.message == "MESSAGE_CREATE payload field 'channel_id' is missing"
    assert raised.value.details == {"event": "MESSAGE_CREATE", "field": "channel_id"}


@pytest.mark.parametrize(
    ("payload", "change", "field"),
    [
        ("message_create_guild.json", {"channel_id": 800000000000000101}, "channel_id"),
        ("message_create_guild.json", {"type": True}, "type"),
        ("message_create_guild.json", {"author": "ada.l"}, "author"),
        ("message_create_guild.json", {"timestamp": "yesterday"}, "timestamp"),
        ("message_create_guild.json", {"mention_roles": [202]}, "mention_roles[0]"),
        ("message_create_user_mentions.json", {"mentions": [{"username": "x"}]}, "mentions[0].id"),
        (
            "message_create_reply.json",
            {"referenced_message": {"id": "1"}},
            "referenced_message.author",
        ),
        ("message_delete.json", {"id": "not-a-snowflake"}, "id"),
        ("message_reaction_remove.json", {"emoji": {"id": None, "name": None}}, "emoji.name"),
        ("typing_start.json", {"timestamp": "1715679301"}, "timestamp"),
        ("thread_create.json", {"parent_id": None}, "parent_id"),
    ],
)
def test_a_needed_field_missing_or_of_the_wrong_type_raises_a_payload_error_naming_it(
    payload: str, change: dict[str, Any], field: str
) -> None:
    dispatch = load(payload)
    dispatch["d"].update(change)
    with pytest.raises(PayloadError) as raised:
        normalise(dispatch)
    assert raised.value.details == {"event": dispatch["t"], "field": field}
    assert f"'{field}'" in raised.value.message


def test_a_handled_dispatch_without_data_raises_a_payload_error() -> None:
    with pytest.raises(PayloadError) as raised:
        normalise({"op": 0, "s": 9, "t": "MESSAGE_CREATE", "d": None})
    assert raised.value.details == {"event": "MESSAGE_CREATE", "field": "d"}


def test_every_handled_dispatch_has_a_recorded_payload() -> None:
    recorded = {load(path.name)["t"] for path in PAYLOADS.glob("*.json")}
    assert set(PARSERS) <= recorded


def test_snowflake_time_reads_the_millisecond_timestamp() -> None:
    assert snowflake_time("1239870099997851649") == at(9, 21, 7, 512)
    assert snowflake_time("0") == datetime(2015, 1, 1, tzinfo=UTC)
    for bad in ["", "-1", "1_000", "١٢", str(1 << 64)]:
        with pytest.raises(ValueError, match="not a snowflake"):
            snowflake_time(bad)


def test_a_thread_update_registers_the_thread_under_its_create_id() -> None:
    thread = {
        "id": "840000000000000001",
        "guild_id": "800000000000000001",
        "parent_id": "820000000000000001",
        "owner_id": "900000000000000001",
        "type": 11,
        "name": "deploy question (renamed)",
        "thread_metadata": {"archived": False, "locked": False},
    }
    created = normalise({"op": 0, "t": "THREAD_CREATE", "d": thread})
    updated = normalise({"op": 0, "t": "THREAD_UPDATE", "d": thread})
    assert created is not None and updated == created


@pytest.mark.parametrize(
    ("payload", "change", "field"),
    [
        ("message_create_guild.json", {"timestamp": "9999-12-31T23:59:59-05:00"}, "timestamp"),
        ("message_create_guild.json", {"timestamp": "0001-01-01T00:00:00+05:00"}, "timestamp"),
        ("message_create_guild.json", {"timestamp": "3500-01-01T00:00:00+00:00"}, "timestamp"),
        ("message_create_guild.json", {"content": "x" * 200_000}, "content"),
        ("message_create_guild.json", {"id": "1" * 5000}, "id"),
        ("message_create_guild.json", {"type": 10**5000}, "type"),
        ("message_create_guild.json", {"mention_roles": ["7" * 5000]}, "mention_roles[0]"),
        ("message_delete.json", {"id": "9" * 5000}, "id"),
        ("typing_start.json", {"timestamp": 10**5000}, "timestamp"),
        ("typing_start.json", {"timestamp": 10**15}, "timestamp"),
        ("typing_start.json", {"timestamp": -1}, "timestamp"),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 30 else "-",
)
def test_absurd_numbers_and_over_long_strings_raise_a_payload_error_naming_them(
    payload: str, change: dict[str, Any], field: str
) -> None:
    dispatch = load(payload)
    dispatch["d"].update(change)
    with pytest.raises(PayloadError) as raised:
        normalise(dispatch)
    assert raised.value.details == {"event": dispatch["t"], "field": field}
    assert len(raised.value.message) < 200  # the value is quoted short, never whole


@pytest.mark.parametrize("dispatch", [[], "MESSAGE_CREATE", 0, None])
def test_a_dispatch_that_is_not_an_object_raises_a_payload_error(dispatch: Any) -> None:
    with pytest.raises(PayloadError, match="object") as raised:
        normalise(dispatch)
    assert raised.value.details == {"field": ""}


@pytest.mark.parametrize("name", ["message_update_edit.json", "message_update_embed_unfurl.json"])
def test_a_recorded_message_update_is_the_whole_message(name: str) -> None:
    assert MessageUpdateEvent.__required_keys__ <= load(name)["d"].keys()
