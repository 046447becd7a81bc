"""Real payload shapes that used to be decided wrong or dropped, replayed through the engine:
deletes of thread parents and bulk deletes, cleared reactions, Enterprise Grid, `app_mention`
with an id the manifest does not know, bots' DMs and thread replies also sent to the channel."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from builders import (
    D_HUMAN,
    D_LEAD,
    D_W1,
    GUILD,
    HUMAN,
    LEAD,
    SLACK_IDS,
    TEAM,
    W1,
    axes,
    delivered,
    discord_dispatch,
    discord_message,
    line,
    local_workspace,
    run,
    slack_body,
    slack_join,
    slack_message,
)

ROOT_TS = "1767225600.000100"
AT = "2026-01-01T00:00:0{}Z"


def cancels(records: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [
        (r["agent"], r["rpc"]["params"]["eventId"], r["rpc"]["params"]["reason"])
        for r in records
        if r.get("rpc", {}).get("method") == "notifications/cancelled"
    ]


def turns(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if "turn" in r]


def test_deleting_a_thread_parent_cancels_its_pending_turn() -> None:
    # A parent with replies is not deleted but turned into a tombstone (slack-bolt's and
    # python-slack-sdk's message_changed shape, message.subtype "tombstone").
    # A fragment, so its turn waits for the compose window (a complete question starts sooner).
    root = slack_message(ROOT_TS, f"<@{LEAD}> about the build")
    reply = slack_message("1767225601.000100", "same here", user="U0BOB", thread_ts=ROOT_TS)
    tombstone = {
        "type": "message",
        "subtype": "message_changed",
        "hidden": True,
        "channel": "C0GEN",
        "channel_type": "channel",
        "ts": "1767225602.000100",
        "event_ts": "1767225602.000100",
        "message": {
            "type": "message",
            "subtype": "tombstone",
            "text": "This message was deleted.",
            "user": "USLACKBOT",
            "hidden": True,
            "ts": ROOT_TS,
            "thread_ts": ROOT_TS,
            "reply_count": 1,
        },
        "previous_message": {**root, "thread_ts": ROOT_TS, "reply_count": 1},
    }
    records, _, report = run(
        [
            line(AT.format(0), "slack", slack_body(root, via="lead"), via="lead"),
            line(AT.format(1), "slack", slack_body(reply, via="lead"), via="lead"),
            line(AT.format(2), "slack", slack_body(tombstone, via="lead"), via="lead"),
        ]
    )
    assert report == ""
    assert ("lead", f"slack:{TEAM}:C0GEN:{ROOT_TS}", "deleted") in cancels(records)
    assert not any("build" in t["turn"]["prompt"] for t in turns(records))


def test_a_bulk_delete_cancels_the_pending_turns_on_every_message_it_names() -> None:
    first = discord_message("1100000000000000001", f"<@{D_LEAD}> deploy it", mentions=[D_LEAD])
    second = discord_message("1100000000000000002", f"<@{D_LEAD}> now", mentions=[D_LEAD])
    bulk = discord_dispatch(
        "MESSAGE_DELETE_BULK",
        {
            "ids": ["1100000000000000001", "1100000000000000002"],
            "channel_id": "820000000000000001",
            "guild_id": GUILD,
        },
    )
    records, _, report = run(
        [
            line(AT.format(0), "discord", first, via="lead"),
            line(AT.format(1), "discord", second, via="lead"),
            line(AT.format(2), "discord", bulk, via="lead"),
        ]
    )
    assert report == ""
    assert cancels(records) == [
        ("lead", "discord:1100000000000000001", "deleted"),
        ("lead", "discord:1100000000000000002", "deleted"),
    ]
    assert turns(records) == []


def test_a_reaction_added_again_after_a_moderator_cleared_them_is_a_new_event() -> None:
    message = discord_message("1100000000000000001", "the deploy is done")
    reaction = {
        "user_id": D_LEAD,
        "channel_id": "820000000000000001",
        "message_id": "1100000000000000001",
        "guild_id": GUILD,
        "emoji": {"id": None, "name": "✅"},
    }
    cleared = {key: reaction[key] for key in ("channel_id", "message_id", "guild_id")}
    for name, data in (
        ("MESSAGE_REACTION_REMOVE_ALL", cleared),
        ("MESSAGE_REACTION_REMOVE_EMOJI", {**cleared, "emoji": reaction["emoji"]}),
    ):
        _, stats, report = run(
            [
                line(AT.format(0), "discord", message, via="lead"),
                line(AT.format(1), "discord", discord_dispatch("MESSAGE_REACTION_ADD", reaction)),
                line(AT.format(2), "discord", discord_dispatch(name, data), via="lead"),
                line(AT.format(3), "discord", discord_dispatch(name, data), via="worker-1"),
                line(AT.format(4), "discord", discord_dispatch("MESSAGE_REACTION_ADD", reaction)),
                line(AT.format(5), "discord", discord_dispatch(name, data), via="lead"),
            ]
        )
        assert report == ""
        # message, add, clearing (its copy is a repeat), the add again, the second clearing
        assert (stats.events, stats.duplicates) == (5, 1), name


def grid_dm(ext_shared: bool) -> dict[str, Any]:
    event = slack_message(ROOT_TS, "can you check the quota?", channel="D0LEAD", channel_type="im")
    event.update(user_team="T0SALES", source_team="T0SALES")
    body = slack_body(event, via="lead")
    body["enterprise_id"] = "E0ORG"
    body["authorizations"][0]["enterprise_id"] = "E0ORG"
    body["is_ext_shared_channel"] = ext_shared
    return body


@pytest.mark.parametrize(
    ("ext_shared", "expected"),
    [
        (False, ("to_me", "must_respond", "buffered", "direct_message")),
        (True, ("to_me", "must_not_respond", "tool_mailbox", "external_author")),
    ],
    ids=["same-organisation", "slack-connect"],
)
def test_a_grid_dm_from_another_workspace_of_the_organisation_is_not_external(
    ext_shared: bool, expected: tuple[str, ...]
) -> None:
    records, _, report = run([line(AT.format(0), "slack", grid_dm(ext_shared), via="lead")])
    assert report == ""
    [params] = delivered(records)["lead"]
    assert (*axes(params), params["attention"]["reason"]) == expected


def test_an_app_mention_naming_another_id_is_a_mention_of_its_receiver(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The app was reinstalled: its bot user is now U0LEAD2, the manifest still says U0LEAD.
    event = slack_message(ROOT_TS, "<@U0LEAD2> can you look?", event_type="app_mention")
    body = slack_body(event, via="lead")
    body["authorizations"][0]["user_id"] = "U0LEAD2"
    lines = [
        line(AT.format(0), "slack", slack_body(slack_join(u), via=a), via=a)
        for a, u in SLACK_IDS.items()
    ]
    with caplog.at_level(logging.WARNING, logger="core.engine"):
        records, _, report = run([*lines, line(AT.format(1), "slack", body, via="lead")])
    assert report == ""
    found = {agent: axes(params[-1]) for agent, params in delivered(records).items()}
    assert found["lead"] == ("to_me", "must_respond", "buffered")
    assert found["worker-1"] == ("to_other", "must_not_respond", "tool_mailbox")
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "U0LEAD2" in warning.getMessage() and "U0LEAD" in warning.getMessage()


def test_an_agents_dm_to_another_agent_follows_the_rules_for_bot_messages() -> None:
    dm = discord_message(
        "1100000000000000001",
        "I pushed the fix",
        author=D_W1,
        bot=True,
        guild=None,
        channel="830000000000000001",
    )
    named = discord_message(
        "1100000000000000002",
        f"<@{D_LEAD}> please review",
        author=D_W1,
        bot=True,
        guild=None,
        channel="830000000000000001",
        mentions=[D_LEAD],
    )
    records, _, report = run(
        [
            line(AT.format(0), "discord", dm, via="lead"),
            line(AT.format(1), "discord", named, via="lead"),
        ]
    )
    assert report == ""
    [plain, mention] = delivered(records)["lead"]
    assert (*axes(plain), plain["attention"]["reason"]) == (
        "to_other",
        "must_not_respond",
        "tool_mailbox",
        "agent_message",
    )
    assert (*axes(mention), mention["attention"]["reason"]) == (
        "to_me",
        "must_respond",
        "buffered",
        "direct_mention",
    )


@pytest.mark.parametrize("webhook", [False, True], ids=["bot", "webhook"])
def test_a_trusted_bots_dm_is_not_a_direct_message(webhook: bool) -> None:
    dm = discord_message(
        "1100000000000000001",
        "build 42 failed",
        author="840000000000000001",
        bot=not webhook,
        guild=None,
        channel="830000000000000001",
    )
    if webhook:
        dm["d"]["webhook_id"] = "840000000000000001"
    workspace = local_workspace(trusted_bots=["840000000000000001"])
    records, _, report = run([line(AT.format(0), "discord", dm, via="lead")], workspace)
    assert report == ""
    [params] = delivered(records)["lead"]
    assert axes(params) == ("to_other", "must_not_respond", "tool_mailbox")


def test_a_humans_dm_is_still_a_direct_message() -> None:
    dm = discord_message(
        "1100000000000000001",
        "are you there?",
        author=D_HUMAN,
        guild=None,
        channel="830000000000000001",
    )
    records, _, _ = run([line(AT.format(0), "discord", dm, via="lead")])
    [params] = delivered(records)["lead"]
    assert params["attention"]["reason"] == "direct_message"


def test_a_thread_reply_also_sent_to_the_channel_reaches_the_channel_watchers_there() -> None:
    lines = [
        line(AT.format(0), "slack", slack_body(slack_join(u), via=a), via=a)
        for a, u in SLACK_IDS.items()
    ]
    root = slack_message(ROOT_TS, f"<@{W1}> can you look at the build?")
    answer = slack_message("1767225601.000100", "on it", user=W1, thread_ts=ROOT_TS, bot_id="B0W1")
    broadcast = slack_message(
        "1767225602.000100", "fixed, the build is green", user=HUMAN, thread_ts=ROOT_TS
    )
    broadcast["subtype"] = "thread_broadcast"
    lines += [
        line(AT.format(1), "slack", slack_body(root, via="worker-1"), via="worker-1"),
        line(AT.format(2), "slack", slack_body(answer, via="worker-1"), via="worker-1"),
        line(AT.format(3), "slack", slack_body(broadcast, via="lead"), via="lead"),
    ]
    records, _, report = run(lines)
    assert report == ""
    last = {agent: params[-1] for agent, params in delivered(records).items()}
    assert last["worker-1"]["conversation"] == {
        "id": "C0GEN",
        "kind": "thread",
        "threadId": ROOT_TS,
    }
    assert last["worker-1"]["attention"]["reason"] == "direct_thread_question"
    for agent in ("lead", "worker-2"):
        assert last[agent]["conversation"] == {"id": "C0GEN", "kind": "channel"}, agent
        assert axes(last[agent]) == ("ambient", "must_not_respond", "tool_mailbox")
