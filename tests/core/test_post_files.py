"""Files on an agent's message: names that are no paths, the limits, and the one rule that
sends a long answer as `answer.md` with a summary cut cleanly at a word."""

from __future__ import annotations

import pytest

from core.errors import ToolError
from core.post_files import (
    ANSWER_NAME,
    ATTACHED_NOTE,
    MAX_FILE_BYTES,
    MAX_NAME,
    PostFile,
    checked_files,
    long_answer,
    parts_needed,
    safe_name,
    summary,
)


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("report.md", "report.md"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\notes.txt", "notes.txt"),
        (".env", "env"),
        ("a\x00b<c>.txt", "a_b_c_.txt"),
        ("/", "file.txt"),
        ("  ", "file.txt"),
    ],
)
def test_a_file_name_keeps_only_its_last_part_without_reserved_characters(
    name: str, safe: str
) -> None:
    assert safe_name(name) == safe


def test_a_very_long_name_is_cut_keeping_its_extension() -> None:
    name = safe_name("x" * 500 + ".py")
    assert len(name) <= MAX_NAME and name.endswith(".py")


def test_files_past_the_limits_are_refused_saying_which() -> None:
    with pytest.raises(ToolError, match="at most 4 files, not 5"):
        checked_files([PostFile(f"{n}.txt", "x") for n in range(5)])
    with pytest.raises(ToolError, match=r"'big\.txt' is 1,000,001 bytes"):
        checked_files([PostFile("big.txt", "x" * (MAX_FILE_BYTES + 1))])
    assert checked_files([PostFile("../a.txt", "é")]) == (PostFile("a.txt", "é"),)


def test_an_answer_within_the_parts_goes_as_text() -> None:
    assert parts_needed("x" * 300, 100) == 3
    assert long_answer("x" * 300, 100, 3) is None
    assert long_answer("x" * 30_000, None, 3) is None


def test_an_answer_past_the_parts_goes_as_answer_md_with_its_first_paragraph() -> None:
    text = "The short version: it works.\n\n" + "detail " * 5_000
    found = long_answer(text, 2_500, 3)
    assert found is not None
    message, file = found
    assert message == f"The short version: it works.\n\n{ATTACHED_NOTE}"
    assert file == PostFile(ANSWER_NAME, text.strip())


def test_a_summary_is_cut_at_a_word_and_marked() -> None:
    said = summary("word " * 400, most=52)
    assert said == "word " * 9 + "word …"
    assert summary("one paragraph\n\nanother") == "one paragraph"
