"""Where the bundled model's plain answer ends: at its first line break, unless that line only
leads in to what follows ("You can use the `ls` command:"), which alone would leave the person
with a colon and nothing after it."""

from __future__ import annotations

import pytest

from harness_bridge.backends.local_model import LEAD_IN_LINES, answer_end


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        ("The capital of France is Paris.", None),  # still writing
        ("The capital of France is Paris.\nben: and Spain?", "The capital of France is Paris."),
        ("You're welcome!\n", "You're welcome!"),
        ("You can use the `ls` command:\n```\nls -la\n", None),  # the lead-in goes on
        ("You can use the `ls` command:  \nls -la", None),
        ("Use it like this: `ls`.\nben: thanks", "Use it like this: `ls`."),  # a colon inside
        ("Here is how:\n\n", None),  # a blank line before what it introduces
        (
            "Here is how:\n\nsudo systemctl restart nginx\n\nben: ok",
            "Here is how:\n\nsudo systemctl restart nginx",
        ),
        ("Steps:\n1. stop it\n2. start it\n\nben: thanks", "Steps:\n1. stop it\n2. start it"),
        ("The answer is:\n\nThe answer is:\n", "The answer is:"),  # repeated, not answered
        ("Run:\ncd /var/log/nginx\nls\ncd /var/log/nginx\n", "Run:\ncd /var/log/nginx\nls"),
        ("Like this:\n```\nls -la\n```\n", None),  # a fence closes: not a repeat
    ],
)
def test_an_answer_is_one_line_unless_its_line_leads_in(written: str, kept: str | None) -> None:
    end = answer_end(written)
    assert (None if end is None else written[:end]) == kept


def test_a_lead_in_goes_on_for_a_bounded_number_of_lines() -> None:
    lines = ["Run these:", *(f"step {n}" for n in range(LEAD_IN_LINES + 5))]
    written = "\n".join(lines)
    end = answer_end(written)
    assert end is not None
    assert written[:end] == "\n".join(lines[: LEAD_IN_LINES + 1])
    assert answer_end("\n".join(lines[: LEAD_IN_LINES + 1])) is None  # the last may go on
