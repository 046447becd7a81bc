"""The web chat's record drops what the workspace's retention outlived (`History.forget`): a
whole thread once nothing has happened in it since, from memory and from the file; the newest
message, who joined where and unreadable lines stay; ids count on. And a line a crash cut short
does not swallow the next one written. An open page drops them too (in real headless Chromium)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from chromium import browser_fixture, wait  # noqa: F401 (the browser fixture)
from live_webchat import running
from selenium.webdriver.remote.webdriver import WebDriver

from adapters.webchat.history import History

OLD, NEW = "2020-01-01T00:00:00Z", "2026-11-28T00:00:00Z"  # the record is in time order
BEFORE = datetime(2026, 1, 1, tzinfo=UTC)
JOINED = {"type": "member_joined", "channel": "general", "user": "lead"}


def day(n: int) -> str:
    """The `n`th of January 2020: long before `BEFORE`."""
    return f"2020-01-{n:02d}T00:00:00Z"


def message(message_id: str, ts: str, thread: str | None = None, **more: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": message_id,
        "channel": "general",
        "thread": thread,
        "user": "ana",
        "text": f"line {message_id}",
        "ts": ts,
        **more,
    }


def change(kind: str, message_id: str, ts: str, **more: Any) -> dict[str, Any]:
    return {"type": kind, "id": message_id, "channel": "general", "user": "bo", "ts": ts, **more}


def written(path: Path, *payloads: dict[str, Any], extra: bytes = b"") -> History:
    path.write_bytes(b"".join(orjson.dumps(p) + b"\n" for p in payloads) + extra)
    history = History(path)
    history.load()
    return history


def ids_in(path: Path) -> list[str]:
    """The message each readable line of the file is about, in order ("" for none)."""
    found = []
    for line in path.read_bytes().splitlines():
        try:
            found.append(str(orjson.loads(line).get("id", "")))
        except orjson.JSONDecodeError:
            found.append("?")
    return found


def test_a_quiet_thread_goes_whole_and_a_live_one_stays_whole(tmp_path: Path) -> None:
    path = tmp_path / "local.webchat.jsonl"
    history = written(
        path,
        JOINED,
        message("1", day(1), key="lead-answer-1"),  # a thread all of whose lines are old
        message("2", day(2), thread="1"),
        change("edit", "2", day(3), text="line 2, edited"),
        change("reaction_added", "1", day(4), emoji="👍"),
        message("3", day(5)),  # an old message whose thread has a reply this year
        message("4", day(6)),  # an old message someone reacts to this year
        message("5", "yesterday"),  # a time that cannot be read keeps its thread
        message("6", day(7)),
        change("edit", "6", "now", text="line 6, edited"),  # and so does a change's
        message("7", NEW, thread="3"),
        change("reaction_added", "4", NEW, emoji="👀"),
        extra=b'{"type": "mess',  # a write a crash cut short
    )
    assert history.forget(BEFORE) == ["1", "2"]
    assert sorted(history.messages) == ["3", "4", "5", "6", "7"]
    assert history.by_key == {}
    assert ids_in(path) == ["", "3", "4", "5", "6", "6", "7", "4", "?"]
    again = History(path)
    again.load()
    assert again.messages == history.messages
    assert history.forget(BEFORE) == []


def test_the_newest_message_stays_however_old(tmp_path: Path) -> None:
    path = tmp_path / "local.webchat.jsonl"
    history = written(path, message("1", day(1)), message("2", day(2)))
    assert history.forget(BEFORE) == ["1"]
    assert ids_in(path) == ["2"]
    again = History(path)
    again.load()
    assert again.next_id() == history.next_id() == "3"  # ids count on from it


def test_lines_written_after_a_prune_are_the_ones_the_next_prune_finds(tmp_path: Path) -> None:
    path = tmp_path / "local.webchat.jsonl"
    history = written(path, message("1", OLD), message("2", OLD), message("3", NEW))
    assert history.forget(BEFORE) == ["1", "2"]
    history.record(change("reaction_added", "3", NEW, emoji="👍"))
    history.record(message("4", NEW))
    assert history.forget(datetime(2027, 1, 1, tzinfo=UTC)) == ["3"]  # with its reaction
    assert ids_in(path) == ["4"]
    history.record(change("edit", "4", NEW, text="line 4, edited"))
    assert ids_in(path) == ["4", "4"]
    assert History(path).load()[-1]["text"] == "line 4, edited"


def test_with_nothing_to_drop_the_file_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "local.webchat.jsonl"
    history = written(path, message("1", NEW), message("2", NEW))
    before = path.stat()
    assert history.forget(BEFORE) == []
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not list(tmp_path.glob("*.new"))
    assert History(None).forget(BEFORE) == []
    assert History(tmp_path / "none.jsonl").forget(BEFORE) == []


def test_a_file_changed_behind_its_back_is_not_pruned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "local.webchat.jsonl"
    history = written(path, message("1", OLD), message("2", NEW))
    with path.open("ab") as file:  # another writer: the lines are no longer the ones it knows
        file.write(orjson.dumps(message("9", NEW)) + b"\n")
    assert history.forget(BEFORE) == []
    assert sorted(history.messages) == ["1", "2"]
    assert ids_in(path) == ["1", "2", "9"]
    assert "holds 3 lines where 2 were written: not pruned" in caplog.text


def test_a_line_a_crash_cut_short_does_not_swallow_the_next(tmp_path: Path) -> None:
    path = tmp_path / "local.webchat.jsonl"
    history = written(path, message("1", NEW), extra=b'{"type": "mess')
    history.record(message("2", NEW))
    assert sorted(_loaded(path).messages) == ["1", "2"]


def _loaded(path: Path) -> History:
    history = History(path)
    history.load()
    return history


def test_in_the_browser_an_open_page_drops_what_retention_dropped(
    tmp_path: Path, browser: WebDriver
) -> None:
    shown = (
        "return [...document.querySelectorAll('#messages li.msg .body')].map(e => e.textContent)"
    )

    async def main() -> None:
        async with running(tmp_path) as chat:
            await asyncio.to_thread(browser.get, chat.chat.url)
            await chat.chat.say("ana", "general", "an old question")
            await chat.chat.say("ana", "general", "the newest line")
            both = ["an old question", "the newest line"]
            await asyncio.to_thread(
                wait, browser, "both lines", lambda d: d.execute_script(shown) == both
            )
            opened = "openThread('1'); return !document.getElementById('thread').hidden"
            assert await asyncio.to_thread(browser.execute_script, opened)  # its thread, open
            later = datetime.now(UTC) + timedelta(days=1)
            assert await chat.chat.forget(later) == 1  # the newest stays, however old
            await asyncio.to_thread(
                wait, browser, "the old line gone", lambda d: d.execute_script(shown) == both[1:]
            )
            closed = "drawTyping(); return document.getElementById('thread').hidden"
            assert await asyncio.to_thread(browser.execute_script, closed)  # and nothing throws

    asyncio.run(main())


def test_a_change_is_on_disk_before_it_is_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Synced, not only written: after a power cut the record holds every message the ledger
    may hold, so no message id is given twice."""
    synced: list[int] = []
    monkeypatch.setattr("adapters.webchat.history.os.fsync", synced.append)
    history = written(tmp_path / "webchat.jsonl")
    history.record(message(history.next_id(), day(1)))
    assert len(synced) == 1
    history.record({"type": "typing", "channel": "general", "user": "ana"})
    assert len(synced) == 1  # typing is never kept
