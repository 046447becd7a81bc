"""Agents' names as people type them (`core.names`, `agents.<id>.names` in the manifest)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from builders import (
    LEAD,
    LOCAL,
    W1,
    W2,
    axes,
    delivered,
    line,
    run,
    slack_body,
    slack_join,
    slack_message,
)

from c2a.platforms import installed
from core.errors import ManifestError
from core.manifest import Workspace, parse_manifest
from core.names import NameMatcher, Naming

MATCHER = NameMatcher.build({"lead": ("ikonia", "iko"), "worker-1": ("bob2",)})
BASE = 1767225600


@pytest.mark.parametrize(
    "text",
    [
        "ikonia: how do I restart nginx?",
        "Ikonia, how do I restart nginx?",
        "IKONIA how do I restart nginx",
        "hey iko, got a minute?",
        "@ikonia ping",
        "what do you think <ikonia>",
        "&lt;ikonia&gt; what do you think",
        "thanks, ikonia",
    ],
)
def test_an_address_in_any_case_and_place_addresses_the_agent(text: str) -> None:
    assert MATCHER.find(text) == {"lead": Naming.ADDRESSED}


def test_a_name_inside_the_sentence_only_mentions_the_agent() -> None:
    assert MATCHER.find("ask ikonia about it later") == {"lead": Naming.MENTIONED}
    assert MATCHER.find("bob2: ask ikonia") == {
        "worker-1": Naming.ADDRESSED,
        "lead": Naming.MENTIONED,
    }


@pytest.mark.parametrize(
    "text",
    [
        "ikonias are nice",
        "the bikonia package",
        "see https://example.com/ikonia for it",
        "run `ikonia --help`",
        "```\nikonia: x\n```",
        "mail me at me@ikonia",
        "ikonia-tools is a package",
        "edit ikonia.conf",
        "<@U0IKONIA> hello",
        "",
    ],
)
def test_never_inside_a_word_a_link_or_code(text: str) -> None:
    assert MATCHER.find(text) == {}


def test_no_names_means_no_search() -> None:
    assert NameMatcher.build({"lead": ()}).find("lead: hello") == {}


def workspace(names: Any) -> Workspace:
    data = yaml.safe_load(LOCAL.read_text())
    data["agents"]["lead"]["names"] = names
    return Workspace.from_manifest(parse_manifest(data, platforms=installed()), installed())


@pytest.mark.parametrize("names", [["two words"], [""], "ikonia", ["x" * 65]])
def test_a_bad_name_is_a_manifest_error_naming_the_field(names: Any) -> None:
    with pytest.raises(ManifestError, match="names"):
        workspace(names)


def say(second: int, text: str) -> str:
    event = slack_message(f"{BASE + second}.000100", text)
    return line(f"2026-01-01T00:00:{second:02d}Z", "slack", slack_body(event))


def decide(text: str) -> dict[str, tuple[str, str, str, str]]:
    joins = [
        line("2026-01-01T00:00:00Z", "slack", slack_body(slack_join(u))) for u in (LEAD, W1, W2)
    ]
    records, _, _ = run(joins + [say(5, text)], workspace(["iko", "Ikonia"]))
    return {a: (*axes(p[-1]), p[-1]["attention"]["reason"]) for a, p in delivered(records).items()}


def test_a_typed_name_is_a_mention_to_the_engine() -> None:
    decided = decide("iko: can you check the deploy logs?")
    assert decided["lead"] == ("to_me", "must_respond", "buffered", "named")
    # for the others it is addressed to someone else, as a mention of the lead would be
    assert decided["worker-1"] == (
        "to_other",
        "must_not_respond",
        "tool_mailbox",
        "addressed_to_other",
    )


def test_a_name_in_the_text_is_likely_for_the_agent() -> None:
    assert decide("maybe ikonia knows")["lead"] == (
        "to_me_likely",
        "may_respond",
        "buffered",
        "named_in_text",
    )


def test_thanks_by_name_is_an_acknowledgement() -> None:
    assert decide("thanks a lot, Ikonia")["lead"][1:] == ("ack_only", "notify", "thanks")
