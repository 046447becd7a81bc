"""The key that tells one Slack message's copies apart from other messages before they are
normalised, and the restamp that gives a reused event its own copy's delivery facts."""

from __future__ import annotations

from typing import Any

import pytest
from builders import HUMAN, TEAM, slack_body, slack_message

from adapters.slack.normalise import normalise
from adapters.slack.repeats import repeat_key, restamp
from core.errors import PayloadError


def copy(body: dict[str, Any], bot: str, event_id: str) -> dict[str, Any]:
    authorization = {"team_id": TEAM, "user_id": bot, "is_bot": True}
    return {**body, "event_id": event_id, "authorizations": [authorization]}


MESSAGE = slack_body(slack_message("1767225600.000100", "hello"))


def test_every_apps_copy_of_one_message_shares_a_key_that_names_the_event_type() -> None:
    first, second = copy(MESSAGE, "U0LEAD", "Ev1"), copy(MESSAGE, "U0W1", "Ev2")
    mention = {**first, "event": {**first["event"], "type": "app_mention"}}
    assert repeat_key(first) == repeat_key(second) == f"{TEAM} message  C0GEN 1767225600.000100"
    assert repeat_key(mention) == f"{TEAM} app_mention  C0GEN 1767225600.000100"
    other = slack_body(slack_message("1767225600.000200", "hello"))
    assert repeat_key(other) != repeat_key(first)


@pytest.mark.parametrize(
    "change",
    [
        {"type": "url_verification"},
        {"enterprise_id": "E1"},
        {"event": {"type": "message", "subtype": "message_changed", "channel": "C1", "ts": "1.0"}},
        {"event": {"type": "reaction_added", "user": HUMAN, "event_ts": "1.0"}},
        {"event": {"type": "message", "channel": "C1", "ts": 1.0}},
        {"event": {"type": "message", "ts": "1.0"}},
        {"event": "not an object"},
        {"team_id": None},
    ],
    ids=[
        "not-an-event",
        "grid",
        "edit",
        "reaction",
        "number-ts",
        "no-channel",
        "bad-event",
        "team",
    ],
)
def test_anything_but_a_posted_message_outside_grid_has_no_key(change: dict[str, Any]) -> None:
    assert repeat_key({**MESSAGE, **change}) is None


def test_a_restamped_event_is_the_event_its_own_copy_normalises_to() -> None:
    first, second = copy(MESSAGE, "U0LEAD", "Ev1"), copy(MESSAGE, "U0W1", "Ev2")
    event = normalise(first)
    assert event is not None
    assert restamp(event, second) == normalise(second)
    with pytest.raises(PayloadError):
        restamp(event, {**second, "authorizations": "not a list"})
