"""A streamed reply's finish is not an edit in the web chat: the platform's record
(`adapters.webchat.history`) shows "(edited)" only for a change after the answer was whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.webchat.history import History
from core.drafts import WRITING


def post(message_id: str, user: str, text: str, key: str | None) -> dict[str, Any]:
    payload = {"type": "message", "id": message_id, "channel": "general", "user": user}
    return {**payload, "text": text, "ts": f"{message_id}.0", "key": key}


def edit(message_id: str, user: str, text: str, ts: str) -> dict[str, Any]:
    return {
        "type": "edit",
        "id": message_id,
        "channel": "general",
        "user": user,
        "text": text,
        "ts": ts,
    }


def edited(history: History) -> dict[str, bool]:
    return {m.id: m.view()["edited"] for m in history}


def test_the_finish_of_a_streamed_reply_is_not_an_edit_and_a_later_edit_is(
    tmp_path: Path,
) -> None:
    history = History(tmp_path / "chat.jsonl")
    history.record(post("1", "lead", "The deploy" + WRITING, key="k1"))
    history.record(post("2", "lead", "Green.", key="k2"))  # posted whole: not streamed
    history.record(post("3", "ana", "I wonder" + WRITING, key=None))  # a person's, marked
    for message_id, user, text in [
        ("1", "lead", "The deploy is green."),
        ("2", "lead", "Green, 42 of 42."),
        ("3", "ana", "I wonder why."),
    ]:
        history.record(edit(message_id, user, text, f"{message_id}.1"))
    assert edited(history) == {"1": False, "2": True, "3": True}
    assert history.messages["1"].text == "The deploy is green."

    history.record(edit("1", "lead", "The deploy is green: 42 of 42.", "1.2"))  # a real edit
    assert edited(history)["1"] is True

    again = History(tmp_path / "chat.jsonl")
    again.load()
    assert edited(again) == {"1": True, "2": True, "3": True}


def test_a_restart_shows_a_finished_reply_unedited(tmp_path: Path) -> None:
    history = History(tmp_path / "chat.jsonl")
    history.record(post("1", "lead", "The deploy" + WRITING, key="k1"))
    history.record(edit("1", "lead", "The deploy is green.", "1.1"))
    again = History(tmp_path / "chat.jsonl")
    again.load()
    assert edited(again) == {"1": False}
    assert again.messages["1"].text == "The deploy is green."
