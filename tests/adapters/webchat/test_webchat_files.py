"""An agent's files on the web chat: shown in its message, each a block the page folds away,
whatever backticks the file holds, and the whole message within the web chat's limit; in
real headless Chromium the page draws each as a closed `<details>` with the file's name."""

from __future__ import annotations

from pathlib import Path

from chromium import browser_fixture  # noqa: F401 (the browser fixture)
from live_webchat import drawn
from selenium.webdriver.remote.webdriver import WebDriver

from adapters.webchat.file_blocks import FILE_MARK, with_files
from core.actions import Post
from core.post_files import PostFile

TRICKY = PostFile("notes.md", "run it:\n```sh\nmake test\n```\ndone")


def test_a_file_is_a_block_whose_fence_no_backticks_inside_can_close() -> None:
    shown = with_files("See the notes.", [TRICKY])
    assert shown == f"See the notes.\n\n{FILE_MARK}notes.md\n````\n{TRICKY.content}\n````"
    assert with_files("no files", []) == "no files"


def test_files_too_long_for_a_message_are_cut_saying_so() -> None:
    big = [PostFile("a.log", "a" * 5_000), PostFile("b.log", "b" * 5_000)]
    shown = with_files("Two logs.", big, limit=4_000)
    assert len(shown) <= 4_000
    assert shown.count("more characters not shown here") == 2
    assert shown.count(FILE_MARK) == 2


_READ = """
return [...document.querySelectorAll('#messages li.msg details.file')].map((d) => ({
  name: d.querySelector('summary').textContent,
  text: d.querySelector('pre').textContent,
  open: d.open,
  before: d.parentElement.firstChild.textContent,
}));
"""


def test_in_the_browser_an_agent_s_file_is_a_folded_block_under_its_message(
    tmp_path: Path, browser: WebDriver
) -> None:
    post = Post(
        agent="lead",
        platform="webchat",
        conversation="general",
        key="k-files",
        text="Here are the notes.",
        files=(TRICKY,),
    )
    (block,) = drawn(tmp_path, browser, post, _READ, "the file's block")
    assert block == {
        "name": f"{FILE_MARK}notes.md",
        "text": TRICKY.content,
        "open": False,
        "before": "Here are the notes.",
    }
