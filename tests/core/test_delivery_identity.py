"""One message is one event: retries, app_mention + message pairs and per-agent copies dedup."""

from __future__ import annotations

from builders import (
    LEAD,
    W1,
    delivered,
    discord_message,
    line,
    run,
    slack_body,
    slack_message,
)

AT = "2026-01-01T00:00:01Z"
TS = "1767225601.000100"


def test_a_slack_retry_of_the_same_event_id_gives_one_delivery_per_agent() -> None:
    body = slack_body(slack_message(TS, f"<@{LEAD}> deploy?"), via="lead")
    records, stats, _ = run([line(AT, "slack", body, "lead"), line(AT, "slack", body, "lead")])
    assert stats.events == 1 and stats.duplicates == 1
    assert [p["eventId"] for p in delivered(records)["lead"]] == [f"slack:T0LOCAL:C0GEN:{TS}"]


def test_app_mention_and_message_for_one_message_are_one_event() -> None:
    text = f"<@{LEAD}> can you check the deploy?"
    message = slack_body(slack_message(TS, text), via="lead")
    mention = slack_body(slack_message(TS, text, event_type="app_mention"), via="lead")
    records, stats, _ = run(
        [line(AT, "slack", mention, "lead"), line(AT, "slack", message, "lead")]
    )
    assert stats.events == 1 and stats.duplicates == 1
    assert len(delivered(records)["lead"]) == 1


def test_one_channel_message_through_three_connections_is_one_delivery_per_agent() -> None:
    event = slack_message(TS, "anyone seen the build?")
    lines = [
        line(AT, "slack", slack_body(dict(event), via=a), a)
        for a in ("lead", "worker-1", "worker-2")
    ]
    records, stats, _ = run(lines)
    assert stats.events == 1 and stats.duplicates == 2
    found = delivered(records)
    assert {agent: len(items) for agent, items in found.items()} == {
        "lead": 1,
        "worker-1": 1,
        "worker-2": 1,
    }
    ids = {p["reliability"]["idempotencyKey"] for items in found.values() for p in items}
    assert ids == {f"slack:T0LOCAL:C0GEN:{TS}:{a}" for a in ("lead", "worker-1", "worker-2")}


def test_a_discord_message_through_three_bots_is_one_delivery_per_agent() -> None:
    payload = discord_message("830000000000000001", "hello all")
    lines = [line(AT, "discord", payload, a) for a in ("lead", "worker-1", "worker-2")]
    records, stats, _ = run(lines)
    assert stats.events == 1
    assert sorted(delivered(records)) == ["lead", "worker-1", "worker-2"]


def test_a_dm_reaches_no_agent_but_its_recipient() -> None:
    # Everyone is a member of #general first, so visibility of the DM is not by accident.
    general = slack_message("1767225600.000100", "morning")
    lines = [line(AT, "slack", slack_body(dict(general), via=a), a) for a in ("lead", "worker-1")]
    dm = slack_message(TS, "are you free?", channel="D0W1", channel_type="im")
    lines.append(line(AT, "slack", slack_body(dm, via="worker-1")))
    records, _, _ = run(lines)
    got = {agent: [p["eventId"] for p in items] for agent, items in delivered(records).items()}
    assert got["worker-1"][-1] == f"slack:T0LOCAL:D0W1:{TS}"
    assert all(f"D0W1:{TS}" not in e for e in got["lead"])


def test_a_discord_dm_without_a_receiving_bot_reaches_nobody() -> None:
    payload = discord_message(
        "830000000000000002", "psst", guild=None, channel="850000000000000009"
    )
    records, stats, _ = run([line(AT, "discord", payload)])
    assert stats.events == 1 and delivered(records) == {}


def test_an_agents_own_message_is_delivered_to_it_only_as_silent() -> None:
    own = slack_message(TS, f"<@{LEAD}> note to self: <@{W1}> please check", user=LEAD)
    lines = [line(AT, "slack", slack_body(dict(own), via=a), a) for a in ("lead", "worker-1")]
    records, _, _ = run(lines)
    found = delivered(records)
    lead = found["lead"][0]
    assert (lead["injection"]["mode"], lead["attention"]["policy"]) == (
        "silent",
        "must_not_respond",
    )
    assert lead["attention"]["reason"] == "own_message"
    assert found["worker-1"][0]["target"]["directedness"] == "to_me"


def test_a_blank_copy_first_does_not_keep_the_text_from_the_ledger(tmp_path: object) -> None:
    # Without Discord's Message Content intent a bot sees other people's messages blank.
    import sqlite3
    from pathlib import Path

    path = Path(str(tmp_path)) / "ledger.sqlite3"
    text = "<@900000000000000002> can you look at the graph?"
    blank = discord_message("830000000000000009", "", mentions=["900000000000000002"])
    full = discord_message("830000000000000009", text, mentions=["900000000000000002"])
    run(
        [line(AT, "discord", blank, "lead"), line(AT, "discord", full, "worker-1")], store=str(path)
    )
    data = sqlite3.connect(path).execute("SELECT data FROM events").fetchone()[0]
    assert "can you look at the graph?" in data


def test_a_message_whose_content_was_withheld_is_a_knock_saying_so() -> None:
    # The lead's bot lacks Message Content: a reply to it with the ping off arrives blank.
    lead_said = discord_message(
        "830000000000000020", "deploy now?", author="900000000000000001", bot=True
    )
    reply = discord_message(
        "830000000000000021", "", reply_to=("830000000000000020", "900000000000000001")
    )
    reply["c2a_content"] = "withheld"
    records, _, _ = run(
        [line(AT, "discord", lead_said, "lead"), line(AT, "discord", reply, "lead")]
    )
    params = delivered(records)["lead"][-1]
    assert (params["target"]["directedness"], params["attention"]["policy"]) == (
        "to_me",
        "must_respond",
    )
    assert params["injection"]["mode"] == "notify"
    assert "content is unavailable" in params["knock"]["topic"]
    assert params["content"] == []


def test_a_copy_through_a_connection_new_to_the_event_is_decided_for_that_agent_only() -> None:
    # Nobody is known to be in the channel: the first copy reaches the lead alone, worker-1's
    # copy tells worker-1, and copies that come again (a resumed session) tell nobody.
    payload = discord_message("830000000000000031", "anyone around?")
    vias = ("lead", "worker-1", "lead", "worker-1")
    records, stats, _ = run([line(AT, "discord", payload, a) for a in vias])
    assert stats.events == 1 and stats.duplicates == 3
    found = delivered(records)
    assert {agent: len(items) for agent, items in found.items()} == {"lead": 1, "worker-1": 1}
