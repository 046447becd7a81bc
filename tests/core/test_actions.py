"""The outbound action union: records round-trip, old indicator records read as Working, and a
record no sender could perform is refused with the key and the reason."""

from __future__ import annotations

import pytest

from core.action_records import from_record, to_record
from core.actions import (
    Ask,
    Choice,
    Delete,
    Edit,
    Post,
    React,
    Unreact,
    Working,
    redacted,
)
from core.errors import StoreError
from core.post_files import PostFile
from core.signals import Signal

_BASE = {"agent": "ada", "platform": "webchat", "conversation": "general", "key": "k1"}


def _to_old(base: dict[str, str]) -> dict[str, str]:
    return {**{k: v for k, v in base.items() if k != "key"}, "idempotencyKey": base["key"]}


ACTIONS = [
    Post(**_BASE, text="hello", thread="t1", mentions=("user:U1",), in_reply_to="e1"),
    Post(**_BASE, text="hi", visibility="dm"),
    Post(**_BASE, text="see the log", files=(PostFile("build.log", "line 1\n"),)),
    Edit(**_BASE, message_id="m1", text="new", draft=True),
    Delete(**_BASE, message_id="m1", thread="t1"),
    React(**_BASE, message_id="m1", signal=Signal.SEEN, event_id="e1"),
    React(**_BASE, message_id="m1", emoji="eyes"),
    React(**_BASE, message_id="m1", signal=Signal.QUEUED, placed=frozenset()),
    React(**_BASE, message_id="m1", signal=Signal.DONE, placed=frozenset({Signal.WORKING})),
    Unreact(**_BASE, message_id="m1", signal=Signal.BLOCKED, event_id="e1"),
    Working(**_BASE, on=True, status="is working on it…", message_id="m1", in_reply_to="e1"),
    Working(**_BASE, on=False),
    Ask(**_BASE, request="r1", text="ada asks", choices=(Choice("y", "Allow", True),)),
    Ask(**_BASE, request="r1", text="ada asks", message_id="m1", outcome="Allow, by U1"),
]


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: type(a).__name__)
def test_an_action_survives_the_outbox_record(action: object) -> None:
    assert from_record(to_record(action)) == action  # type: ignore[arg-type]


def test_the_record_keeps_the_outbox_s_camel_case_shape() -> None:
    record = to_record(ACTIONS[0])
    assert record["action"] == "send"
    assert record["idempotencyKey"] == "k1"
    assert record["inReplyTo"] == "e1"
    assert record["mentions"] == ["user:U1"]


def test_a_post_without_files_is_stored_as_before_and_an_old_record_reads_without_files() -> None:
    assert "files" not in to_record(Post(**_BASE, text="hi"))
    old = {**_to_old(_BASE), "action": "send", "text": "hi"}
    assert from_record(old) == Post(**_BASE, text="hi")


def test_a_reaction_recorded_before_it_said_what_is_placed_reads_as_not_known() -> None:
    old = {**_to_old(_BASE), "action": "react", "messageId": "m1", "signal": "done"}
    assert from_record(old) == React(**_BASE, message_id="m1", signal=Signal.DONE, placed=None)


def test_indicator_records_written_before_read_as_working() -> None:
    typing = {**_to_old(_BASE), "action": "typing", "state": "stop", "timeoutSeconds": 30}
    status = {**_to_old(_BASE), "action": "status", "status": "is working on it…"}
    assert from_record(typing) == Working(**_BASE, on=False, timeout_s=30)
    assert from_record(status) == Working(**_BASE, on=True, status="is working on it…")


@pytest.mark.parametrize(
    ("record", "why"),
    [
        ({"action": "shout"}, "no action 'shout'"),
        ({**_to_old(_BASE), "action": "send"}, "text is None"),
        ({**_to_old(_BASE), "action": "send", "text": "x", "visibility": "loud"}, "visibility"),
        ({**_to_old(_BASE), "action": "react", "messageId": "m"}, "neither a signal"),
        ({**_to_old(_BASE), "action": "react", "messageId": "m", "signal": "boo"}, "boo"),
        ({**_to_old(_BASE), "action": "unreact", "messageId": "m"}, "signal is None"),
        ({**_to_old(_BASE), "action": "unreact", "messageId": "m", "signal": "boo"}, "boo"),
        ({**_to_old(_BASE), "action": "send", "text": "x", "mentions": "all"}, "mentions"),
        (
            {
                **_to_old(_BASE),
                "action": "react",
                "messageId": "m",
                "signal": "done",
                "placed": "seen",
            },
            "placed",
        ),
        ({**_to_old(_BASE), "action": "send", "text": "x", "files": "a"}, "files is str"),
        ({**_to_old(_BASE), "action": "send", "text": "x", "files": [{"name": 1}]}, "a file"),
    ],
)
def test_a_record_no_sender_could_perform_is_refused(record: dict[str, object], why: str) -> None:
    with pytest.raises(StoreError, match=why):
        from_record(record)


def test_redaction_reaches_every_word_people_read() -> None:
    def clean(text: str) -> str:
        return text.replace("secret", "[redacted]")

    post = redacted(Post(**_BASE, text="a secret", files=(PostFile("a.txt", "secret: x"),)), clean)
    edit = redacted(Edit(**_BASE, message_id="m", text="secret"), clean)
    working = redacted(Working(**_BASE, on=True, status="on secret"), clean)
    assert isinstance(post, Post) and post.text == "a [redacted]"
    assert post.files == (PostFile("a.txt", "[redacted]: x"),)
    assert isinstance(edit, Edit) and edit.text == "[redacted]"
    assert isinstance(working, Working) and working.status == "on [redacted]"


def test_an_engine_reaction_that_names_its_agent_only_in_its_key_is_that_agent_s() -> None:
    record = {
        "action": "react",
        "platform": "slack",
        "conversation": "C0GEN",
        "messageId": "1.0",
        "signal": "seen",
        "eventId": "e1",
        "idempotencyKey": "e1:worker-2:react:seen",
    }
    assert from_record(record).agent == "worker-2"
    with pytest.raises(StoreError, match="names no agent"):
        from_record({**record, "idempotencyKey": "k"})


def test_each_action_names_its_record_kind() -> None:
    assert [a.kind for a in ACTIONS] == [to_record(a)["action"] for a in ACTIONS]
