"""The host's notices in an agent's name: their words are known again, whatever the loop's
length, and a person's words never are; each is said where the question was."""

from __future__ import annotations

import pytest
from builders import slack_body, slack_message

from adapters.slack import normalise
from core import notices


@pytest.mark.parametrize(
    "text",
    [notices.UNAVAILABLE, notices.UNANSWERED, notices.loop_stopped(4), notices.loop_stopped(12)],
)
def test_each_notice_is_known_again(text: str) -> None:
    assert notices.is_notice(text)


@pytest.mark.parametrize(
    "text", ["Stopping here.", f"{notices.UNANSWERED} Really.", "Sorry: I have not managed"]
)
def test_words_that_only_look_like_a_notice_are_not_one(text: str) -> None:
    assert not notices.is_notice(text)


@pytest.mark.parametrize(
    ("channel", "kind", "visibility"), [("D0W1", "im", "dm"), ("C0GEN", "channel", "thread")]
)
def test_a_notice_is_said_where_the_question_was(channel: str, kind: str, visibility: str) -> None:
    said = slack_message("1767225601.000100", "deploy done?", channel=channel, channel_type=kind)
    event = normalise(slack_body(said, via="worker-1"))
    assert event is not None
    post = notices.notice("worker-1", event, "k", notices.UNANSWERED)
    assert (post.conversation, post.visibility, post.in_reply_to) == (
        channel,
        visibility,
        event.event_id,
    )
    assert notices.notice("worker-1", event, "k", "x", reply=False).in_reply_to is None
