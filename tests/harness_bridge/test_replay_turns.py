"""`c2a replay` reports the model turns each harness would start, with their exact prompts."""

from __future__ import annotations

from typing import Any

from builders import LEAD, line, run, slack_body, slack_delete, slack_edit, slack_message

from harness_bridge.prompt import parse_rendered

BASE = 1767225600


def dm(second: float, text: str) -> str:
    ts = f"{BASE + second:.6f}"
    event = slack_message(ts, text, channel="D0LEAD", channel_type="im")
    return line(f"2026-01-01T00:00:{second:06.3f}Z", "slack", slack_body(event, via="lead"), "lead")


def turns(records: list[dict[str, Any]], agent: str = "lead") -> list[dict[str, Any]]:
    return [r["turn"] for r in records if "turn" in r and r["agent"] == agent]


def test_the_specs_five_fragments_become_one_turn_with_the_rules_first() -> None:
    pieces = ["when someone types", "in", "pieces", "like this", "the agent should wait"]
    records, _, _ = run([dm(1 + 0.75 * n, text) for n, text in enumerate(pieces)])
    (turn,) = turns(records)
    assert turn["mode"] == "buffered" and len(turn["eventIds"]) == 5
    assert turn["at"] == "2026-01-01T00:00:07Z"
    assert turn["prompt"].startswith("C2A RESPONSE RULES")
    blocks = parse_rendered(turn["prompt"])
    assert [b["event_id"] for b in blocks] == turn["eventIds"]
    assert [b["message"] for b in blocks] == pieces


def test_an_edit_before_injection_gives_one_turn_with_only_the_edited_text() -> None:
    ts = f"{BASE + 1:.6f}"
    edit = slack_edit(
        ts,
        f"{BASE + 2:.6f}",
        "chekc the deploy",
        "check the deploy",
        channel="D0LEAD",
        channel_type="im",
    )
    records, _, _ = run(
        [dm(1, "chekc the deploy"), line("2026-01-01T00:00:02Z", "slack", slack_body(edit))]
    )
    (turn,) = turns(records)
    assert [b["message"] for b in parse_rendered(turn["prompt"])] == ["check the deploy"]


def test_a_delete_before_injection_gives_no_turn_and_a_cancellation() -> None:
    delete = slack_delete(
        f"{BASE + 1:.6f}", f"{BASE + 2:.6f}", "oops", channel="D0LEAD", channel_type="im"
    )
    records, _, _ = run(
        [
            dm(1, "the password is hunter2"),
            line("2026-01-01T00:00:02Z", "slack", slack_body(delete)),
        ]
    )
    assert turns(records) == []
    cancelled = [
        r["rpc"]["params"]
        for r in records
        if r.get("rpc", {}).get("method") == "notifications/cancelled"
    ]
    assert [c["reason"] for c in cancelled] == ["deleted"]


def test_a_turn_a_delete_brings_forward_is_reported_before_what_comes_after_it() -> None:
    """A question, then an unfinished tail deleted: the turn is due at the question's settle
    time, so it is reported before the next line, in the order the host would send it."""
    tail = slack_delete(
        f"{BASE + 1.1:.6f}", f"{BASE + 1.4:.6f}", "and the", channel="D0LEAD", channel_type="im"
    )
    records, _, _ = run(
        [
            dm(1, "is the deploy green?"),
            dm(1.1, "and the"),
            line("2026-01-01T00:00:01.400Z", "slack", slack_body(tail)),
            dm(2, "anyway"),
        ]
    )
    lead = [r for r in records if r["agent"] == "lead"]
    first = next(i for i, r in enumerate(lead) if "turn" in r)
    later = [r["rpc"]["params"]["eventId"] for r in lead[first:] if "rpc" in r]
    assert f"slack:T0LOCAL:D0LEAD:{BASE + 2:.6f}" in later
    assert lead[first]["turn"]["eventIds"] == [f"slack:T0LOCAL:D0LEAD:{BASE + 1:.6f}"]


def test_a_knocks_prompt_holds_none_of_the_messages_words() -> None:
    text = "<!subteam^S0BACK> zanzibar quokka migration failing"
    events = [slack_message(f"{BASE + 1:.6f}", text)]
    lines = [
        line("2026-01-01T00:00:01Z", "slack", slack_body(dict(events[0]), via=a), a)
        for a in ("lead", "worker-1", "worker-2")
    ]
    records, _, _ = run(lines)
    knocks = [
        t
        for agent in ("worker-1", "worker-2")
        for t in turns(records, agent)
        if t["mode"] == "notify"
    ]
    assert len(knocks) == 1
    prompt = knocks[0]["prompt"]
    assert "zanzibar" not in prompt and "quokka" not in prompt and "migration" not in prompt
    assert parse_rendered(prompt)[0]["knock.topic"]
    assert f"<@{LEAD}>" not in prompt
